import type { DraftControl } from '../adapters/types.js';
import { CalError } from '../errors.js';
import type { TmuxLocation } from '../handles/schema.js';
import type { PaneScreen } from '../tmux/screen.js';
import { paneAlive, type TmuxControl } from './tmux-control.js';
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

export type DraftCheck =
  /** The pane is not the handle's own or not alive: nothing was sent. */
  | { pane: 'gone' }
  /** The box was empty (`cleared: false`) or was emptied of a draft; `box: false`: no box seen. */
  | { pane: 'ready'; box: boolean; cleared: boolean };

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
  if (!(await paneAlive(tmux, location))) return { pane: 'gone' };
  let screen = await tmux.screen(location.paneId);
  let draft = screen ? control.read(screen) : null;
  for (const until = Date.now() + BOX_WAIT_MS; screen && draft === null && Date.now() < until; ) {
    await sleep(POLL_MS * 2);
    screen = await tmux.screen(location.paneId);
    draft = screen ? control.read(screen) : null;
  }
  if (!screen) return { pane: 'gone' };
  if (draft === null) return { pane: 'ready', box: false, cleared: false };
  if (draft === '') return { pane: 'ready', box: true, cleared: false };
  await emptyBox(req, control, tmux, location.paneId, screen);
  return { pane: 'ready', box: true, cleared: true };
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

/** Rounds of the adapter's keys, each waited on until drawn, until the box reads empty. */
async function emptyBox(req: TurnRequest, control: DraftControl, tmux: TmuxControl, paneId: string, from: PaneScreen): Promise<void> {
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
}

/**
 * After a paste into a box cal just emptied: waits until the box shows the message's beginning
 * (or the TUI's stand-in for a long paste), so the message is known to stand alone before Enter.
 */
export async function checkLanded(req: TurnRequest, location: TmuxLocation, typed: string): Promise<void> {
  const control = req.adapter.draft as DraftControl;
  const tmux = req.tmux(location.socket);
  const head = squash(typed.split('\n').find((l) => l.trim()) ?? '').slice(0, 24);
  let screen: PaneScreen | null = null;
  let shown: string | null = null;
  for (const until = Date.now() + PASTE_SHOWN_MS; Date.now() < until; await sleep(POLL_MS)) {
    screen = await tmux.screen(location.paneId);
    shown = screen ? control.read(screen) : null;
    if (shown && (squash(shown).startsWith(head) || /^\[pasted/i.test(shown))) return;
  }
  // The message is in the box behind something else (or not at all): take it back out, send nothing.
  if (screen && shown) await emptyBox(req, control, tmux, location.paneId, screen).catch(() => undefined);
  throw notCleared(req, `the pasted message did not land on an empty prompt (the box shows ${JSON.stringify((shown ?? '').slice(0, 60))})`);
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

function notCleared(req: TurnRequest, why: string): CalError {
  return new CalError('non_continuable', `cal could not clear the draft in ${req.adapter.name}'s input box (${why}), so it did not paste (nothing was sent); clear it in the pane (cal inspect, then a), then continue`);
}

/** Blanks as one space; a zero-width space (a guard pasteText may add) as nothing. */
const squash = (s: string) => s.replace(/\u200b/g, '').replace(/\s+/g, ' ').trim();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
