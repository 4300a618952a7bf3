import type { TmuxLocation } from '../handles/schema.js';
import type { PaneScreen } from '../tmux/screen.js';
import type { OwnPane, PaneInfo, PaneListing, PaneSpec, PaneState } from '../tmux/tmux.js';

export type { PaneListing } from '../tmux/tmux.js';

/**
 * What the engine needs of tmux, as an interface it is given: the real server on cal's own
 * socket in production, a fake in the engine's unit tests.
 */
export interface TmuxControl {
  readonly socket: string;
  newPane(spec: PaneSpec): Promise<PaneInfo>;
  paneState(paneId: string): Promise<PaneState>;
  paste(paneId: string, text: string, submit?: boolean, lineFeeds?: boolean): Promise<void>;
  /** Pastes only if the pane is still `own` and alive, checked by tmux with the paste; whether it pasted. */
  pasteIfOwn(own: OwnPane, text: string, submit?: boolean, lineFeeds?: boolean): Promise<boolean>;
  sendKeys(paneId: string, keys: string[]): Promise<void>;
  capture(paneId: string, lines?: number): Promise<string>;
  /** The visible screen with its styles and the cursor (to read an input box), or null. */
  screen(paneId: string): Promise<PaneScreen | null>;
  killSession(session: string): Promise<boolean>;
  /** Every pane on the server, with its attached clients (for reaping idle panes). */
  listPanes(): Promise<PaneListing[]>;
  killServer(): Promise<void>;
}

/** The environment variable that tags every process of a pane (see util/tagged-processes.ts). */
export const PANE_TAG_ENV = 'CAL_PANE_TAG';

/** Opens tmux on a socket: how the engine reaches a handle's server (which may be another one). */
export type TmuxFactory = (socket: string) => TmuxControl;

/**
 * Whether the pane a handle records is still that pane. Pane ids restart at %0 in a new tmux
 * server, so an id alone can name another session's pane: the pane must also sit in the tmux
 * session cal created for it and, where recorded, run the same process.
 */
export function samePane(location: TmuxLocation, state: PaneState): boolean {
  if (!state.exists) return false;
  if (state.session !== undefined && state.session !== location.session) return false;
  if (location.panePid !== undefined && state.pid !== undefined && state.pid !== location.panePid) return false;
  return true;
}

/** The pane as the handle recorded it, for pasteIfOwn. */
export function ownPane(location: TmuxLocation): OwnPane {
  return { paneId: location.paneId, session: location.session, ...(location.panePid !== undefined ? { pid: location.panePid } : {}) };
}

/** The pane is the handle's own and its process still runs. */
export async function paneAlive(tmux: TmuxControl, location: TmuxLocation): Promise<boolean> {
  const state = await tmux.paneState(location.paneId);
  return samePane(location, state) && !state.dead;
}
