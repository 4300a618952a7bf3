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
