import { TmuxServer } from '../tmux/tmux.js';
import type { StateStore } from '../state/store.js';

/**
 * Presses keys in a session's current pane, as a person at the terminal would (certify's
 * interrupt scenarios press Escape). Returns false when the session has no live pane.
 */
export async function pressKeysInPane(store: StateStore, ref: string, keys: string[]): Promise<boolean> {
  const handle = await store.loadHandle(ref);
  const location = handle.provider.tmux;
  if (!location) return false;
  const tmux = new TmuxServer(location.socket);
  if (!(await tmux.isPaneAlive(location.paneId))) return false;
  await tmux.sendKeys(location.paneId, keys);
  return true;
}
