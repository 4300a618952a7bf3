import { unreapedChildOf } from '../util/process-identity.js';

/** The shapes tmux control deals in (tmux.ts): panes as cal creates, records and lists them. */

export interface PaneSpec {
  session: string;
  cwd: string;
  argv: string[];
  /** The complete environment of the pane's process (the server's own is kept empty). */
  env: Record<string, string>;
  width?: number;
  height?: number;
}

export interface PaneInfo {
  session: string;
  paneId: string;
  pid: number;
}

/** A pane as cal recorded it: its id, its tmux session and, where known, its process. */
export interface OwnPane {
  paneId: string;
  session: string;
  pid?: number;
}

export interface PaneState {
  exists: boolean;
  dead: boolean;
  deadStatus: number | null;
  /** The tmux session the pane belongs to, and its process (pane ids are reused by a new server). */
  session?: string;
  pid?: number;
}

/** One pane of the server as list-panes sees it: for reaping (who is attached, since when). */
export interface PaneListing {
  session: string;
  paneId: string;
  pid: number;
  dead: boolean;
  /** How many clients (terminals) are attached to the pane's session now. */
  clients: number;
  /** When a client was last attached to the session (epoch seconds), or null if never. */
  lastAttached: number | null;
}

/**
 * How long a pane whose CLI exited stays (dead, its last words readable) before tmux ends it:
 * longer than a turn takes to notice the death (engine/tmux-turn.ts checks every 0.5 to 5 s) and
 * than a person takes to look with cal inspect; then the pane, its session and, with the last
 * one, the server end (docs/reaping.md).
 */
export const DEAD_PANE_KEPT_SECONDS = 300;

/** The `pane-died` hook that ends a dead pane `seconds` after its CLI exited. */
export function deadPaneHook(seconds: number): string {
  return `run-shell -C -d ${seconds} "kill-pane -t #{hook_pane}"`;
}

/**
 * The tmux format fields that say whether the server has seen a dead pane's process end, for
 * `nudgeUnreaped`. tmux before 3.6 built with utempter (Debian's 3.3a) can miss the SIGCHLD of a
 * pane's process that ends while tmux removes the pane's utmp record (utempter sets SIGCHLD to its
 * default meanwhile): the pane reads dead (its terminal closed) with no dead time, its process
 * stays the server's zombie, and `pane-died`, whose hook ends the pane, waits for the server's
 * next SIGCHLD (tmux issue 4559; 3.6 sends itself one). Measured: 4 in 38 killed panes.
 */
export const REAP_FIELDS = '#{pane_dead}\t#{pane_dead_time}\t#{pid}\t#{pane_pid}';

/**
 * Sends the server the SIGCHLD it missed, only when the pane's process is its unreaped zombie: it
 * then reaps, and `pane-died` runs. Where /proc cannot tell, nothing is sent.
 */
export function nudgeUnreaped(dead?: string, deadTime?: string, serverPid?: string, panePid?: string): void {
  if (dead !== '1' || deadTime || !/^\d+$/.test(serverPid ?? '') || !/^\d+$/.test(panePid ?? '')) return;
  if (!unreapedChildOf(Number(panePid), Number(serverPid))) return;
  try {
    process.kill(Number(serverPid), 'SIGCHLD');
  } catch {
    // The server has gone: nothing is left to reap.
  }
}
