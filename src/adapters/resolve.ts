import { accessSync, existsSync, constants as fsConstants, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { CalError } from '../errors.js';
import type { FileIdentity, PinnedCli } from '../handles/schema.js';
import { packagePath } from '../util/package-root.js';
import { nodeRequirement, packageVersion } from './cli-node.js';
import { compareVersions } from './versions.js';
import { runFile } from '../util/spawn.js';

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
  // A checkout of cal has the pinned CLIs (its devDependencies), which cal demo and cal model env use: say where.
  const pinned = cliPath ? null : packagePath('node_modules', '.bin', name);
  const hint = pinned && existsSync(pinned) ? `; cal's pinned copy is ${pinned} (add its folder to PATH, or pass --cli-path)` : '';
  throw new CalError('cli_missing', `${name} was not found ${where}: install it or pass --cli-path${hint}; cal doctor lists every CLI`);
}

/** How an adapter asks its CLI's version (Gemini asks it in a throwaway home: `--version` writes there). */
export type VersionReader = (executable: string, env: Record<string, string>) => Promise<string>;

/** Runs `<exe> --version` and extracts the first dotted version number. */
export async function readVersion(executable: string, env: Record<string, string>, args = ['--version']): Promise<string> {
  const run = await runFile(executable, args, { env, timeoutMs: 30_000 });
  const m = /(\d+\.\d+\.\d+(?:[-+][\w.]+)?)/.exec(`${run.stdout}\n${run.stderr}`);
  if (m?.[1]) return m[1];
  const status = run.error ? (run.error.code ?? run.error.message) : run.timedOut ? 'timed out' : run.signal ?? `exit ${run.exitCode}`;
  throw new CalError('cli_missing', `${executable} --version printed no version (${status}); is it the right program?`);
}

/** The identity of a file (its real path), or null when it cannot be read. */
export function fileIdentity(file: string): FileIdentity | null {
  try {
    const st = statSync(file);
    return { size: st.size, mtimeMs: st.mtimeMs, dev: st.dev, ino: st.ino };
  } catch {
    return null;
  }
}

function sameIdentity(a: FileIdentity, b: FileIdentity): boolean {
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.dev === b.dev && a.ino === b.ino;
}

/**
 * Pins an executable: its paths, its version (read once, here) and the identity of its real
 * path, taken before the version is read so a binary replaced meanwhile is not trusted later.
 */
export async function pinCli(
  found: { path: string; realPath: string },
  env: Record<string, string>,
  versionOf: VersionReader = readVersion,
): Promise<PinnedCli> {
  await checkCliNode(found.realPath, env);
  const identity = fileIdentity(found.realPath);
  const version = packageVersion(found.realPath) ?? (await versionOf(found.realPath, env));
  return { path: found.path, realPath: found.realPath, version, ...(identity ? { identity } : {}) };
}

/**
 * The pinned executable must still be there, in the version the handle was pinned to, at every
 * continuation. The file's identity (size, mtime, device, inode of the real path) stands for its
 * version: only a file that differs from the pinned one (or a handle pinned before identities
 * were kept) is asked `--version` again, once. Returns the pin to keep (with the identity of the
 * file as it is now, after such a re-read).
 */
export async function checkPinned(
  pinned: PinnedCli,
  env: Record<string, string>,
  name: string,
  versionOf: VersionReader = readVersion,
): Promise<PinnedCli> {
  const gone = () => new CalError('cli_missing', `${name} ${pinned.version} pinned by this handle is gone from ${pinned.realPath}: reinstall that version or start a new session`);
  try {
    accessSync(pinned.realPath, fsConstants.X_OK);
  } catch {
    throw gone();
  }
  const now = fileIdentity(pinned.realPath);
  if (!now) throw gone();
  if (pinned.identity && sameIdentity(pinned.identity, now)) return pinned;
  const version = packageVersion(pinned.realPath) ?? (await versionOf(pinned.realPath, env));
  if (version !== pinned.version) {
    throw new CalError('cli_missing', `${name} at ${pinned.realPath} is now version ${version}, but this handle is pinned to ${pinned.version}: reinstall ${pinned.version} or start a new session`);
  }
  return { ...pinned, identity: now };
}

/**
 * Refuses (`cli_unsupported`) a Node CLI whose package needs a newer Node than the `node` first
 * on `env.PATH`, the one its `#!/usr/bin/env node` line runs it on (docs/node.md). That node is
 * asked its version only when it is not the one running cal.
 */
export async function checkCliNode(cliRealPath: string, env: Record<string, string>): Promise<void> {
  const needs = nodeRequirement(cliRealPath);
  if (!needs) return;
  const fix = `put a Node ${needs.floor} or newer first on PATH`;
  let node: { path: string; realPath: string };
  try {
    node = findExecutable('node', undefined, env);
  } catch {
    throw new CalError('cli_unsupported', `${needs.name} at ${cliRealPath} runs on Node ${needs.nodeRange}, and no node is on PATH: ${fix}`);
  }
  let running = process.execPath;
  try {
    running = realpathSync(process.execPath);
  } catch {
    // compare by the path as given
  }
  const version = node.realPath === running ? process.versions.node : await readVersion(node.realPath, env);
  if (compareVersions(version, needs.floor) < 0) {
    throw new CalError('cli_unsupported', `${needs.name} at ${cliRealPath} needs Node ${needs.nodeRange}, but the node first on PATH (${node.path}) is ${version}: ${fix}`, {
      actual: version,
      expected: needs.nodeRange,
    });
  }
}
