import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { z } from '../../util/zod.js';
import { readVersion } from '../resolve.js';
import { isScript } from '../cli-node.js';

/**
 * The npm package `@github/copilot` installs `npm-loader.js`, a node wrapper that runs the
 * native binary of a platform package (`@github/copilot-<platform>-<arch>`, file `copilot`)
 * and waits for it (measured on 1.0.102). cal pins and runs that binary: the wrapper only
 * locates it, and a node process between tmux and the TUI would only relay signals.
 */
function platformPackages(): string[] {
  const arch = process.arch;
  if (process.platform === 'linux') return [`@github/copilot-linux-${arch}`, `@github/copilot-linuxmusl-${arch}`];
  return [`@github/copilot-${process.platform}-${arch}`];
}

const PackageJson = z.object({ name: z.string(), version: z.string() }).passthrough();

function packageOf(dir: string): z.infer<typeof PackageJson> | null {
  try {
    const parsed = PackageJson.safeParse(JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** The native binary behind a found `copilot`: itself when native, else the one the npm loader runs. */
export function nativeCopilotBinary(found: { path: string; realPath: string }): string {
  if (!isScript(found.realPath)) return found.realPath;
  const root = path.dirname(found.realPath);
  if (packageOf(root)?.name !== '@github/copilot') return found.realPath;
  const req = createRequire(path.join(root, 'package.json'));
  for (const pkg of platformPackages()) {
    try {
      // The platform package exports only its binary (`".": "./copilot"`, as the loader resolves it), not its package.json.
      const binary = req.resolve(pkg);
      if (existsSync(binary)) return binary;
    } catch {
      // not installed for this platform: the next candidate
    }
  }
  // No platform package: the loader reports it itself when run.
  return found.realPath;
}

/**
 * The version of a Copilot binary: its platform package's own `version` when it sits in one
 * (asking the binary unpacks ~235 MB into a fresh home's cache first), else `copilot --version`.
 */
export async function copilotVersion(executable: string, env: Record<string, string>): Promise<string> {
  const pkg = packageOf(path.dirname(executable));
  if (pkg && pkg.name.startsWith('@github/copilot-') && path.basename(executable) === 'copilot') return pkg.version;
  return readVersion(executable, env);
}
