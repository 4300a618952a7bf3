import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * `npm ci` refuses a lock that does not list every optional dependency of a package, on every
 * platform. The registry this project installs from serves only the linux-x64 builds of some CLIs
 * (OpenCode, Kilo, Cline), so an `npm install` here writes a lock without the other platforms'
 * entries, and CI's clean `npm ci` stops after 12 s. Each missing entry is added by hand, in
 * npm's own shape (version, cpu, os, optional), which npm then keeps.
 */
const LockFile = z.object({
  packages: z.record(
    z.string(),
    z.object({ optionalDependencies: z.record(z.string(), z.string()).optional() }).passthrough(),
  ),
});

describe('package-lock.json', () => {
  it('lists every optional dependency of every locked package, so npm ci accepts it', () => {
    const lockPath = path.join(import.meta.dirname, '..', '..', 'package-lock.json');
    const lock = LockFile.parse(JSON.parse(readFileSync(lockPath, 'utf8')));
    const locked = Object.keys(lock.packages);
    const missing: string[] = [];
    for (const [where, entry] of Object.entries(lock.packages)) {
      for (const name of Object.keys(entry.optionalDependencies ?? {})) {
        // npm resolves a dependency in the nearest node_modules up from its parent.
        const found = locked.some((key) => key.endsWith(`node_modules/${name}`) && `${where}/`.startsWith(key.slice(0, -name.length - 'node_modules/'.length)));
        if (!found) missing.push(`${where} → ${name}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
