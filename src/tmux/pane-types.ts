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
