import { tmuxSocketFor } from '../engine/tmux-socket.js';
import { TmuxServer } from '../tmux/tmux.js';
import type { StateStore } from '../state/store.js';

/** Ends every pane of one state directory (its own tmux server): for demo and certify scratch state. */
export async function shutdownTransports(store: StateStore): Promise<void> {
  await new TmuxServer(await tmuxSocketFor(store.layout.tmux)).killServer();
}
