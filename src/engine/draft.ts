import type { DraftControl } from '../adapters/types.js';
import { CalError } from '../errors.js';
import type { TmuxLocation } from '../handles/schema.js';
import { plainText, type PaneScreen } from '../tmux/screen.js';
import { sessionIdle } from '../util/process-identity.js';
import { ownPane, paneAlive, samePane, type TmuxControl } from './tmux-control.js';
import type { TurnRequest } from './types.js';

/**
 * A draft a person left in a live pane's input box (attached, typed, detached without Enter),
 * cleared before cal pastes so it never goes out with cal's message (docs/drafts.md). The pane is
 * the control channel here: its screen is read to decide whether and when to paste, never for
 * an answer or a turn's end.
 */

/** How often the screen is read while the TUI takes the clearing keys. */
const POLL_MS = 40;
/** After a key, how long the TUI may take to draw its effect before the box is read anyway. */
const KEY_EFFECT_MS = 1500;
/** How many rounds of clearing keys a draft may take (Claude Code: one a wrapped row). */
const MAX_ROUNDS = 24;
/** How long cal waits for a recognisable input box before it pastes as it always did. */
const BOX_WAIT_MS = 1000;
/** How long a pasted message may take to show in the box. */
const PASTE_SHOWN_MS = 2000;
/** How long a TUI that drops an early Enter gets to show a paste before Enter goes anyway (a loaded machine). */
const PASTE_TAKEN_MS = 10_000;
/** How long a TUI's processes are watched for work before a second Enter. */
const IDLE_WINDOW_MS = 1000;

export type DraftCheck =
  /** The pane is not the handle's own or not alive: nothing was sent. */
  | { pane: 'gone' }
  /** The box was empty (`cleared: false`) or was emptied of a draft; `box: false`: no box seen. */
  | { pane: 'ready'; box: boolean; cleared: false }
  /** A draft was cleared: what it was, kept for the person who typed it (event `draft_cleared`). */
  | { pane: 'ready'; box: true; cleared: true; draft: ClearedDraft };

/**
 * A draft cal cleared. `text`: the box's first row as the adapter read it; `rows`: the screen
 * rows the clearing removed, which hold the whole draft when it wrapped onto more rows.
 */
export interface ClearedDraft {
  text: string;
  rows: string[];
}

/**
 * Reads the input box and empties it of a draft, waiting after each round of keys until the TUI
 * has drawn their effect. Refuses (nothing sent) a CLI whose input cannot be cleared, and a draft
 * that does not go. A screen with no box the adapter knows is pasted into as before.
 */
export async function clearDraft(req: TurnRequest, location: TmuxLocation): Promise<DraftCheck> {
  const tmux = req.tmux(location.socket);
  const control = req.adapter.draft;
  if (!control) {
    if (!(await paneAlive(tmux, location))) return { pane: 'gone' };
    throw new CalError('non_continuable', `${req.adapter.name}'s input box cannot be cleared of a draft a person may have typed into its pane, so cal does not paste into it (nothing was sent)`);
  }
  let screen = await tmux.screen(location.paneId);
  // The screen's own reading of the pane says whether it is the handle's and alive, with no
  // tmux client of its own (the common case, an empty box, costs one client); a reader that does
  // not say is asked.
  if (!(screen?.pane ? screenIsOwn(screen.pane, location) : await paneAlive(tmux, location))) return { pane: 'gone' };
  let draft = screen ? control.read(screen) : null;
  for (const until = Date.now() + BOX_WAIT_MS; screen && draft === null && Date.now() < until; ) {
    await sleep(POLL_MS * 2);
    screen = await tmux.screen(location.paneId);
    draft = screen ? control.read(screen) : null;
  }
  if (!screen) return { pane: 'gone' };
  if (draft === null) return { pane: 'ready', box: false, cleared: false };
  if (draft === '') return { pane: 'ready', box: true, cleared: false };
  const after = await emptyBox(req, control, tmux, location.paneId, screen);
  return { pane: 'ready', box: true, cleared: true, draft: { text: draft, rows: removedRows(screen, after) } };
}

/**
 * For a CLI whose launch cannot carry the message (OpenCode's resumed TUI ignores `--prompt`):
 * waits until the freshly launched TUI draws its input box empty, so the paste lands in it and
 * not in a terminal the TUI has not taken over yet. False when the pane died or no empty box
 * showed within `timeoutMs`; the screen decides only when to paste, never the turn's outcome.
 */
export async function awaitEmptyBox(req: TurnRequest, location: TmuxLocation, timeoutMs: number): Promise<boolean> {
  const control = req.adapter.draft;
  if (!control) return true;
  const tmux = req.tmux(location.socket);
  for (const until = Date.now() + timeoutMs; Date.now() < until; await sleep(POLL_MS * 5)) {
    const screen = await tmux.screen(location.paneId);
    if (!screen) return false;
    if (control.read(screen) === '') return true;
  }
  return false;
}

/**
 * Whether the pane shows the CLI's input box drawn and empty: the CLI is at its prompt, not behind
 * a dialog. False when the adapter knows no box, or the pane is gone.
 */
export async function showsEmptyBox(req: TurnRequest, location: TmuxLocation): Promise<boolean> {
  const control = req.adapter.draft;
  if (!control) return false;
  const screen = await req.tmux(location.socket).screen(location.paneId);
  return !!screen && control.read(screen) === '';
}

/**
 * The rows of `before` that `after` no longer shows (each row of `after` matches one row of
 * `before` at most), without trailing blanks: what the clearing took off the screen.
 */
export function removedRows(before: PaneScreen, after: PaneScreen | null): string[] {
  const left = new Map<string, number>();
  for (const line of after?.lines ?? []) {
    const row = plainText(line).trimEnd();
    left.set(row, (left.get(row) ?? 0) + 1);
  }
  const removed: string[] = [];
  for (const line of before.lines) {
    const row = plainText(line).trimEnd();
    const n = left.get(row) ?? 0;
    if (n > 0) left.set(row, n - 1);
    else if (row.trim() !== '') removed.push(row);
  }
  return removed;
}

/** Rounds of the adapter's keys, each waited on until drawn, until the box reads empty; the last screen read. */
async function emptyBox(req: TurnRequest, control: DraftControl, tmux: TmuxControl, paneId: string, from: PaneScreen): Promise<PaneScreen | null> {
  let screen: PaneScreen | null = from;
  let draft: string | null = control.read(from);
  // Two rounds in a row that change nothing: the keys do not clear this box.
  for (let round = 0, idle = 0; round < MAX_ROUNDS && draft !== '' && idle < 2; round++) {
    const was = draft;
    await tmux.sendKeys(paneId, [...control.keys]);
    screen = await drawnAfter(tmux, paneId, screen as PaneScreen);
    draft = screen ? control.read(screen) : null;
    if (draft === null) throw notCleared(req, 'its input box went from the screen while cal cleared it');
    idle = draft === was ? idle + 1 : 0;
  }
  if (draft !== '') throw notCleared(req, `${control.keys.join(' ')} left text in it`);
  return screen;
}

/**
 * After a paste into a box cal just emptied: waits until the box shows the message's beginning
 * (or the TUI's stand-in for a long paste), so the message is known to stand alone before Enter.
 */
export async function checkLanded(req: TurnRequest, location: TmuxLocation, typed: string): Promise<void> {
  const control = req.adapter.draft as DraftControl;
  const tmux = req.tmux(location.socket);
  let screen: PaneScreen | null = null;
  let shown: string | null = null;
  for (const until = Date.now() + PASTE_SHOWN_MS; Date.now() < until; await sleep(POLL_MS)) {
    screen = await tmux.screen(location.paneId);
    shown = screen ? control.read(screen) : null;
    if (showsMessage(shown, typed)) return;
  }
  // The message is in the box behind something else (or not at all): take it back out, send nothing.
  if (screen && shown) await emptyBox(req, control, tmux, location.paneId, screen).catch(() => undefined);
  throw notCleared(req, `the pasted message did not land on an empty prompt (the box shows ${JSON.stringify((shown ?? '').slice(0, 60))})`);
}

/**
 * Waits until the box shows a message just pasted (the TUI has taken the paste, so an Enter now
 * submits it), for at most `PASTE_TAKEN_MS`; past that, Enter goes anyway and the engine's second
 * Enter covers a dropped one. For `pasteSubmitDelayMs: 'when-shown'`.
 */
async function pasteShown(req: TurnRequest, location: TmuxLocation, typed: string): Promise<boolean> {
  const control = req.adapter.draft;
  if (!control) return false;
  const tmux = req.tmux(location.socket);
  for (const until = Date.now() + PASTE_TAKEN_MS; Date.now() < until; await sleep(POLL_MS)) {
    const screen = await tmux.screen(location.paneId);
    if (!screen) return false;
    if (showsMessage(control.read(screen), typed)) return true;
  }
  return false;
}

/**
 * Whether Enter may be pressed once more for a pasted message the CLI has not recorded: not when
 * its box reads empty, since the box took the message. A box that still holds text (the message,
 * or a TUI's stand-in for a long paste) or that cal cannot read gets the second Enter, as a
 * swallowed Enter needs; for a TUI that drops an Enter before it has taken the paste
 * (`pasteSubmitDelayMs: 'when-shown'`, Cline CLI) only once its processes sit idle too. A TUI
 * that is only slow still has the first Enter to process, and Cline's handles both Enters
 * before it redraws: two runs, "SessionRuntime state is running", and the turn ended with
 * nothing after the prompt (CI, a loaded machine; 7-9 s with the message in the box, measured).
 */
export async function enterDropped(req: TurnRequest, location: TmuxLocation): Promise<boolean> {
  const control = req.adapter.draft;
  if (!control) return true;
  const screen = await req.tmux(location.socket).screen(location.paneId);
  if ((screen ? control.read(screen) : null) === '') return false;
  if (req.adapter.pasteSubmitDelayMs !== 'when-shown' || location.panePid === undefined) return true;
  return (await sessionIdle(location.panePid, IDLE_WINDOW_MS)) !== false;
}

/** The box shows the message's beginning, or the TUI's stand-in for a long paste. */
function showsMessage(shown: string | null, typed: string): boolean {
  const head = squash(typed.split('\n').find((l) => l.trim()) ?? '').slice(0, 24);
  // A TUI's stand-in for a long paste: `[Pasted …]`, or Cline CLI's `[<its start>... Pasted +63 lines]`.
  return !!shown && (squash(shown).startsWith(head) || /^\[pasted/i.test(shown) || /^\[.*\bpasted \+\d+ lines\]$/i.test(squash(shown)));
}

/** Polls until the screen differs from `before` and holds still for one poll, or the bound passes. */
async function drawnAfter(tmux: TmuxControl, paneId: string, before: PaneScreen): Promise<PaneScreen | null> {
  const was = before.lines.join('\n');
  let last: string | null = null;
  let screen: PaneScreen | null = before;
  for (const until = Date.now() + KEY_EFFECT_MS; Date.now() < until; ) {
    await sleep(POLL_MS);
    screen = await tmux.screen(paneId);
    if (!screen) return null;
    const now = screen.lines.join('\n');
    if (now !== was && now === last) return screen;
    last = now;
  }
  return screen;
}

function screenIsOwn(pane: NonNullable<PaneScreen['pane']>, location: TmuxLocation): boolean {
  const state = { exists: true, dead: pane.dead, deadStatus: null, session: pane.session, ...(pane.pid !== null ? { pid: pane.pid } : {}) };
  return samePane(location, state) && !pane.dead;
}

function notCleared(req: TurnRequest, why: string): CalError {
  return new CalError('non_continuable', `cal could not clear the draft in ${req.adapter.name}'s input box (${why}), so it did not paste (nothing was sent); clear it in the pane (cal inspect, then a), then continue`);
}

/** Blanks as one space; a zero-width space (a message guard may add) as nothing. */
const squash = (s: string) => s.replace(/\u200b/g, '').replace(/\s+/g, ' ').trim();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Bracketed paste, then Enter: at once, or as the adapter declares (a pause, or once the box
 * shows the message; a box just emptied of a draft always waits for that). Into a pane
 * cal just launched, or (`if-own`) only while the pane is still the one the handle records,
 * alive: false when it was not, and nothing was pasted.
 */
export async function pasteAndSubmit(req: TurnRequest, location: TmuxLocation, typed: string, pane: 'launched' | 'if-own', checkLanding = false): Promise<boolean> {
  const tmux = req.tmux(location.socket);
  const submit = req.adapter.pasteSubmitDelayMs ?? 0;
  const whenShown = submit === 'when-shown';
  const delay = whenShown ? 0 : submit;
  const enterNow = delay <= 0 && !checkLanding && !whenShown;
  if (pane === 'launched') await tmux.paste(location.paneId, typed, enterNow, req.adapter.pasteKeepsLineFeeds);
  else if (!(await tmux.pasteIfOwn(ownPane(location), typed, enterNow, req.adapter.pasteKeepsLineFeeds))) return false;
  if (!enterNow) {
    const pastedAt = Date.now();
    // A box just emptied of a draft: Enter only once the message shows there alone.
    if (checkLanding) await checkLanded(req, location, typed);
    else if (whenShown) await pasteShown(req, location, typed);
    const rest = delay - (Date.now() - pastedAt);
    if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
    await tmux.sendKeys(location.paneId, ['Enter']);
  }
  return true;
}
