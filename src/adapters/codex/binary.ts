import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { CalError } from '../../errors.js';
import { isScript } from '../cli-node.js';

/**
 * The npm package `@openai/codex` installs `bin/codex.js`, a node wrapper that execs a native
 * binary from a platform package (`@openai/codex-<platform>`, an alias of
 * `@openai/codex@<version>-<platform>`) at `vendor/<target triple>/bin/codex`. cal pins and runs
 * that native binary: the wrapper is only a locator, and another wrapper on PATH must not change
 * which Codex a session runs.
 */
const PLATFORM_PACKAGES: Record<string, { triple: string; pkg: string }> = {
  'linux-x64': { triple: 'x86_64-unknown-linux-musl', pkg: '@openai/codex-linux-x64' },
  'linux-arm64': { triple: 'aarch64-unknown-linux-musl', pkg: '@openai/codex-linux-arm64' },
  'android-x64': { triple: 'x86_64-unknown-linux-musl', pkg: '@openai/codex-linux-x64' },
  'android-arm64': { triple: 'aarch64-unknown-linux-musl', pkg: '@openai/codex-linux-arm64' },
  'darwin-x64': { triple: 'x86_64-apple-darwin', pkg: '@openai/codex-darwin-x64' },
  'darwin-arm64': { triple: 'aarch64-apple-darwin', pkg: '@openai/codex-darwin-arm64' },
};

function platformEntry(): { triple: string; pkg: string } | null {
  return PLATFORM_PACKAGES[`${process.platform}-${process.arch}`] ?? null;
}

function packageName(dir: string): string | null {
  try {
    const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: unknown };
    return typeof pkg.name === 'string' ? pkg.name : null;
  } catch {
    return null;
  }
}

/**
 * Where a release of the npm package keeps the native binary, relative to a package root (the
 * wrapper's own, or the platform package's): `vendor/<triple>/bin/codex` (0.16x), before that
 * `vendor/<triple>/codex/codex` (0.80–0.12x, measured), and `bin/codex-<triple>` (0.40).
 */
function nativeLayouts(root: string, triple: string): string[] {
  return [path.join(root, 'vendor', triple, 'bin', 'codex'), path.join(root, 'vendor', triple, 'codex', 'codex'), path.join(root, 'bin', `codex-${triple}`)];
}

/**
 * The native binary behind a found `codex`: itself when it is native (a standalone install or
 * `--cli-path` to the binary), else the one the npm wrapper would exec.
 */
export function nativeCodexBinary(found: { path: string; realPath: string }): string {
  if (!isScript(found.realPath)) return found.realPath;
  const packageRoot = path.dirname(path.dirname(found.realPath));
  if (packageName(packageRoot) !== '@openai/codex') {
    // A script of some other origin (a user's own wrapper): run it as it is.
    return found.realPath;
  }
  const entry = platformEntry();
  if (!entry) throw new CalError('cli_missing', `Codex has no native binary for ${process.platform}-${process.arch}`);
  const candidates: string[] = [];
  try {
    const req = createRequire(path.join(packageRoot, 'package.json'));
    candidates.push(...nativeLayouts(path.dirname(req.resolve(`${entry.pkg}/package.json`)), entry.triple));
  } catch {
    // not resolvable from the wrapper: try the wrapper's own folders
  }
  candidates.push(...nativeLayouts(packageRoot, entry.triple));
  for (const candidate of candidates) {
    if (existsSync(candidate)) return realpathSync(candidate);
  }
  throw new CalError(
    'cli_missing',
    `the Codex wrapper at ${found.realPath} has no native binary (${entry.pkg} is not installed): reinstall @openai/codex`,
  );
}

/**
 * The environment the npm wrapper gives the native binary: which package manager owns it and
 * the wrapper's package root (Codex uses both only for update and diagnostics messages). Empty
 * for a binary that is not inside an npm installation.
 */
export function wrapperEnv(nativeBinary: string): Record<string, string> {
  // The package holding the binary: the platform package (…/@openai/codex-<platform>/vendor/
  // <triple>/…, named @openai/codex too) or, in older releases, the wrapper package itself.
  let holder: string | null = null;
  for (let dir = path.dirname(nativeBinary), i = 0; i < 5; i++, dir = path.dirname(dir)) {
    if (packageName(dir) === '@openai/codex') {
      holder = dir;
      break;
    }
  }
  if (!holder) return {};
  const scope = path.dirname(holder);
  const candidates = [holder, path.join(scope, 'codex'), path.resolve(holder, '..', '..', '..')];
  for (const root of candidates) {
    if (packageName(root) === '@openai/codex' && existsSync(path.join(root, 'bin', 'codex.js'))) {
      return { CODEX_MANAGED_BY_NPM: '1', CODEX_MANAGED_PACKAGE_ROOT: realpathSync(root) };
    }
  }
  return {};
}

/**
 * The environment a Codex process gets: the user's, what the npm wrapper adds, and no error
 * backtraces (with RUST_BACKTRACE=1 inherited, a refused resume ends in a stack of
 * `<unknown>` frames that buries Codex's own one-line error; panics keep theirs).
 */
export function codexEnv(env: Record<string, string>, nativeBinary: string): Record<string, string> {
  const out = { ...env, ...wrapperEnv(nativeBinary) };
  if (out.RUST_LIB_BACKTRACE === undefined) out.RUST_LIB_BACKTRACE = '0';
  return out;
}
