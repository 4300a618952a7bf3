import path from 'node:path';
import envPaths from 'env-paths';

/**
 * The state directory: `--state-dir`, else CAL_STATE_DIR, else the XDG state dir
 * (`$XDG_STATE_HOME/cal`, default `~/.local/state/cal`).
 */
export function resolveStateDir(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (explicit) return path.resolve(explicit);
  if (env.CAL_STATE_DIR) return path.resolve(env.CAL_STATE_DIR);
  if (env.XDG_STATE_HOME) return path.join(env.XDG_STATE_HOME, 'cal');
  // env-paths follows XDG on Linux; its "log" dir is $XDG_STATE_HOME/<name>.
  return envPaths('cal', { suffix: '' }).log;
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
