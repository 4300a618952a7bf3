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

/** The pane's current screen, for people (inspect's preview); never an answer. */
export async function transportScreen(handle: ProviderHandle, lines = 50): Promise<string | null> {
  if (!handle.tmux) return null;
  const tmux = new TmuxServer(handle.tmux.socket);
  if (!(await tmux.paneState(handle.tmux.paneId)).exists) return null;
  return tmux.capture(handle.tmux.paneId, lines);
}

/** argv that attaches a terminal to the session's pane on cal's own tmux socket. */
export function attachArgv(handle: ProviderHandle): string[] | null {
  if (!handle.tmux) return null;
  return ['tmux', '-S', handle.tmux.socket, 'attach-session', '-t', `=${handle.tmux.session}`];
}
