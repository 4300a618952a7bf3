import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The installed package's root folder. This module sits two folders below it both in the
 * compiled library (dist/util/) and in the bundled command-line entry (dist/bin/, where every
 * chunk lands in one folder), so one relative step finds it from either; the files cal ships or
 * runs beside itself (package.json, bin/cal.cjs, Pi's bridge extension, the pinned CLIs of a
 * checkout) are named from here, never relative to the module that needs them.
 */
let root: string | null = null;

export function packagePath(...segments: string[]): string {
  // Found on first use, not at load: every command loads this module, few name a file by it.
  root ??= fileURLToPath(new URL('../../', import.meta.url));
  return path.join(root, ...segments);
}

/** Set by scripts/bundle.mjs in the bundled command line (so no command reads package.json to build its help); absent in the library. */
declare const __CAL_VERSION__: string | undefined;

let version: string | null = typeof __CAL_VERSION__ === 'string' ? __CAL_VERSION__ : null;

/** cal's own version, from its package.json. */
export function calVersion(): string {
  if (version === null) {
    // cal's own shipped manifest, not user state: a type check is all it needs (no zod on --version).
    const pkg = JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as { version?: unknown };
    if (typeof pkg.version !== 'string') throw new Error(`${packagePath('package.json')} has no version`);
    version = pkg.version;
  }
  return version;
}
