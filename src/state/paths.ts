import { lstatSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CalError } from '../errors.js';

/**
 * The state directory: `--state-dir`, else CAL_STATE_DIR, else the XDG state dir
 * (`$XDG_STATE_HOME/cal`, default `~/.local/state/cal`).
 */
export function resolveStateDir(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (explicit !== undefined) {
    // An empty --state-dir is a mistake (an unset variable in a script), never the default.
    if (explicit.trim() === '') throw new CalError('usage', '--state-dir is empty: give a directory, or leave the option out for the default');
    return path.resolve(explicit);
  }
  if (env.CAL_STATE_DIR) return path.resolve(env.CAL_STATE_DIR);
  if (env.XDG_STATE_HOME) return path.join(env.XDG_STATE_HOME, 'cal');
  return defaultStateDir(env);
}

/**
 * Where env-paths (which cal used before) puts an app's state ("log") folder, without loading
 * it on every call: XDG on Linux, ~/Library/Logs on macOS, %LOCALAPPDATA% on Windows.
 */
function defaultStateDir(env: NodeJS.ProcessEnv): string {
  const home = os.homedir();
  if (process.platform === 'darwin') return path.join(home, 'Library', 'Logs', 'cal');
  if (process.platform === 'win32') return path.join(env.LOCALAPPDATA || path.join(home, 'AppData', 'Local'), 'cal', 'Log');
  return path.join(env.XDG_STATE_HOME || path.join(home, '.local', 'state'), 'cal');
}

export interface StateLayout {
  root: string;
  handles: string;
  turns: string;
  locks: string;
  tmux: string;
  homes: string;
  history: string;
}

export function stateLayout(root: string): StateLayout {
  return {
    root,
    handles: path.join(root, 'handles'),
    turns: path.join(root, 'turns'),
    locks: path.join(root, 'locks'),
    tmux: path.join(root, 'tmux'),
    homes: path.join(root, 'homes'),
    history: path.join(root, 'history'),
  };
}

/** A state directory that is a file (`--state-dir /etc/passwd`) is a usage error, said plainly. */
export function refuseNonDirectoryRoot(root: string): void {
  try {
    const st = lstatSync(root);
    if (st.isFile()) throw new CalError('usage', `state directory ${root} is a file, not a directory`);
  } catch (err) {
    if (err instanceof CalError) throw err;
  }
}

/** The file system's refusals while opening the state directory, as usage errors naming it. */
export function unusableStateDir(err: unknown, root: string): unknown {
  if (err instanceof CalError) return err;
  const why: Record<string, string> = {
    ENOTDIR: 'a part of its path is a file, not a directory',
    EACCES: 'permission denied',
    EPERM: 'operation not permitted',
    EEXIST: 'a file of that name is in the way',
    EROFS: 'the file system is read-only',
    ENOSPC: 'no space left on the device',
    ELOOP: 'too many symlinks on its path',
    ENAMETOOLONG: 'its path is too long',
  };
  const reason = why[(err as NodeJS.ErrnoException).code ?? ''];
  return reason ? new CalError('usage', `cannot use state directory ${root}: ${reason}`) : err;
}

/**
 * The mark `cal remove` leaves for a removed handle, `handles/<id>.removed` (ids are random and
 * never reused). A cal still running a turn of that handle (`remove --force`) checks it around
 * each of its writes, so the handle, its events and its turns never come back (issue 40, item 4).
 */
export function removedMarkFile(handlesDir: string, id: string): string {
  return path.join(handlesDir, `${id}.removed`);
}
