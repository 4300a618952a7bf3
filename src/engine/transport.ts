import type { ProviderHandle } from '../handles/schema.js';
import { TmuxServer } from '../tmux/tmux.js';

/** Ends a session's live transport (its tmux pane). Returns what was killed, or null. */
export async function killTransport(handle: ProviderHandle): Promise<{ paneId: string } | null> {
  if (!handle.tmux) return null;
  const killed = await new TmuxServer(handle.tmux.socket).killSession(handle.tmux.session);
  return killed ? { paneId: handle.tmux.paneId } : null;
}

/** Whether the session's current pane is alive (for inspect; never a completion signal). */
export async function transportAlive(handle: ProviderHandle): Promise<boolean> {
  if (!handle.tmux) return false;
  return new TmuxServer(handle.tmux.socket).isPaneAlive(handle.tmux.paneId);
}
