import type { PaneScreen } from '../tmux/screen.js';

/**
 * What an adapter declares about its CLI's pane as a control channel (the input box, the keys cal
 * presses): never an answer or a turn's end.
 */

/** Keys pressed after a stall of `afterMs` (CliAdapter.stallKeys). */
export interface StallKeys {
  afterMs: number;
  keys: string[];
}

/** Reading and clearing a draft in a CLI's input box (measured per CLI: docs/drafts.md). */
export interface DraftControl {
  /**
   * What the input box's first row holds ('' when empty, its placeholder aside), read from the
   * pane's screen; null when the screen shows no input box of a shape the adapter knows.
   */
  read(screen: PaneScreen): string | null;
  /**
   * Keys (tmux send-keys names) that delete a draft, or one wrapped row of it: cal sends them,
   * waits until the TUI has drawn their effect, and reads the box again, a bounded number of
   * times. Never Enter, never a key that interrupts, quits or opens a dialog.
   */
  readonly keys: readonly string[];
}

/** Between the keys of a CLI's interrupt: two Escapes in one write read as Alt+Escape. */
export const INTERRUPT_KEY_GAP_MS = 200;
