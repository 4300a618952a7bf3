import { accessSync, constants as fsConstants, realpathSync } from 'node:fs';
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

/** Runs `<exe> --version` and extracts the first dotted version number. */
export async function readVersion(executable: string, env: Record<string, string>, args = ['--version']): Promise<string> {
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
