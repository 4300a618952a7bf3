import { accessSync, constants as fsConstants, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { CalError } from '../errors.js';
import type { PinnedCli } from '../handles/schema.js';

/** Finds an executable on PATH (or takes the given path) and returns its real path. */
export function findExecutable(name: string, cliPath: string | undefined, env: Record<string, string>): { path: string; realPath: string } {
  const candidates = cliPath ? [path.resolve(cliPath)] : (env.PATH ?? '').split(':').filter(Boolean).map((dir) => path.join(dir, name));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, fsConstants.X_OK);
      return { path: candidate, realPath: realpathSync(candidate) };
    } catch {
      // try the next one
    }
  }
  const where = cliPath ? `at ${cliPath}` : `on PATH`;
  throw new CalError('cli_missing', `${name} was not found ${where}: install it or pass --cli-path`);
}

/**
 * The version of an executable that an npm package installs as one of its `bin` entries, from
 * that package's package.json (what its `--version` prints), or null for anything else. Running
 * `pi --version` boots all of Pi (measured: 2-3 s), on every resume of a pinned CLI.
 */
export function packageVersion(executable: string): string | null {
  let dir = path.dirname(executable);
  for (let depth = 0; depth < 4; depth++) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version?: unknown; bin?: unknown };
      const bins = typeof pkg.bin === 'string' ? [pkg.bin] : pkg.bin && typeof pkg.bin === 'object' ? Object.values(pkg.bin) : [];
      const listed = bins.some((b) => typeof b === 'string' && path.resolve(dir, b) === executable);
      return listed && typeof pkg.version === 'string' && /^\d+\.\d+\.\d+/.test(pkg.version) ? pkg.version : null;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return null;
    }
    const up = path.dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
  return null;
}

/** The version an executable reports: its npm package's, else `<exe> --version`'s first dotted number. */
export async function readVersion(executable: string, env: Record<string, string>, args = ['--version']): Promise<string> {
  if (args.length === 1 && args[0] === '--version') {
    const fromPackage = packageVersion(executable);
    if (fromPackage) return fromPackage;
  }
  const res = await execa(executable, args, { env, extendEnv: false, reject: false, timeout: 30_000, stdin: 'ignore' });
  const m = /(\d+\.\d+\.\d+(?:[-+][\w.]+)?)/.exec(`${res.stdout}\n${res.stderr}`);
  if (!m?.[1]) throw new CalError('cli_missing', `${executable} --version printed no version (exit ${res.exitCode}); is it the right program?`);
  return m[1];
}

/** The pinned executable must still be there, unchanged in version, at every continuation. */
export async function checkPinned(pinned: PinnedCli, env: Record<string, string>, name: string): Promise<void> {
  try {
    accessSync(pinned.realPath, fsConstants.X_OK);
  } catch {
    throw new CalError('cli_missing', `${name} ${pinned.version} pinned by this handle is gone from ${pinned.realPath}: reinstall that version or start a new session`);
  }
  const version = await readVersion(pinned.realPath, env);
  if (version !== pinned.version) {
    throw new CalError('cli_missing', `${name} at ${pinned.realPath} is now version ${version}, but this handle is pinned to ${pinned.version}: reinstall ${pinned.version} or start a new session`);
  }
}
