import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { z } from '../../util/zod.js';
import { isScript } from '../cli-node.js';
import { readVersion } from '../resolve.js';

/**
 * The npm package `@kilocode/cli` installs `bin/kilo`, a node wrapper that runs a native binary
 * (7.7.7): `bin/.kilo` beside it when its postinstall made one (a hard link), else the binary of
 * the platform package (`@kilocode/cli-<platform>-<arch>[-baseline][-musl]`, file `bin/kilo`). cal
 * pins and runs that binary, as it does Copilot's: a node process between tmux and the TUI would
 * only relay signals, and every store read (store.ts) would start node first. The binary finds
 * its tree-sitter files beside itself (`<its folder>/tree-sitter`), which is all the wrapper adds.
 */
function platformPackages(): string[] {
  const base = `@kilocode/cli-${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  return [base, `${base}-baseline`, `${base}-musl`, `${base}-baseline-musl`];
}

export function nativeKiloBinary(found: { path: string; realPath: string }): string {
  if (!isScript(found.realPath)) return found.realPath;
  const binDir = path.dirname(found.realPath);
  const cached = path.join(binDir, '.kilo');
  if (existsSync(cached)) return cached;
  const req = createRequire(path.join(path.dirname(binDir), 'package.json'));
  for (const pkg of platformPackages()) {
    try {
      const binary = path.join(path.dirname(req.resolve(`${pkg}/package.json`)), 'bin', 'kilo');
      if (existsSync(binary)) return binary;
    } catch {
      // not installed for this platform: the next candidate
    }
  }
  // No native binary found: the wrapper says so itself when run.
  return found.realPath;
}

const PackageJson = z.object({ name: z.string(), version: z.string() }).passthrough();

/**
 * The version of a Kilo binary: the package it sits in says it (`@kilocode/cli` for `bin/.kilo`,
 * the platform package for its `bin/kilo`), else `kilo --version` (about 2 s: a whole start).
 */
export async function kiloVersion(executable: string, env: Record<string, string>): Promise<string> {
  try {
    const pkg = PackageJson.safeParse(JSON.parse(readFileSync(path.join(path.dirname(path.dirname(executable)), 'package.json'), 'utf8')));
    const name = path.basename(executable);
    if (pkg.success && ((pkg.data.name === '@kilocode/cli' && name === '.kilo') || (pkg.data.name.startsWith('@kilocode/cli-') && name === 'kilo'))) return pkg.data.version;
  } catch {
    // not in a package: ask the binary
  }
  return readVersion(executable, env);
}
