import type { HandleSummary, PaneView } from '../sessions/agent-sessions.js';
import type { CertificationInfo } from './source.js';
import type { EventRecord } from '../state/store.js';
import type { ToolActivity, TurnRecord } from '../state/turns.js';
import { stripTerminalControls } from '../util/terminal-text.js';

/**
 * Pure text helpers shared by the Ink TUI and the plain-text inspect output. Nothing here
 * loads Ink or React, so the plain path may import it freely.
 */

/** A short age: "12s", "5m", "3h", "2d" (never negative). */
export function age(iso: string | null | undefined, now: number): string {
  if (!iso) return '-';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '-';
  const s = Math.max(0, Math.floor((now - t) / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  return `${Math.floor(h / 24)}d`;
}

/** Seconds as "7s" or "2m05s" (for spinners). */
export function elapsed(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

/** The clock time of an ISO timestamp, "HH:MM:SS" (UTC, as stored). */
export function clock(iso: string): string {
  return /T(\d\d:\d\d:\d\d)/.exec(iso)?.[1] ?? iso;
}

/** Whitespace folded to single spaces, cut to `max` characters with an ellipsis. */
export function oneLine(text: string, max = 80): string {
  // Shown, never the exact text: a terminal's control sequences go (util/terminal-text.ts).
  const flat = stripTerminalControls(text.replace(/\s+/g, ' ')).trim();
  const chars = Array.from(flat);
  return chars.length > max ? `${chars.slice(0, Math.max(1, max - 1)).join('')}…` : flat;
}

export function pad(text: string, width: number): string {
  const clipped = oneLine(text, width);
  return clipped + ' '.repeat(Math.max(0, width - Array.from(clipped).length));
}

/** The current pane and the archived ones (every pane that is not the current one). */
export function splitPanes(panes: PaneView[]): { current: PaneView | null; archived: PaneView[] } {
  return { current: panes.find((p) => p.current) ?? null, archived: panes.filter((p) => !p.current) };
}

/** One line for a tool call: what ran and how it ended. */
export function toolLine(tool: ToolActivity, max = 100): string {
  const who = tool.kind === 'mcp' ? `mcp ${tool.server ?? '?'}.${tool.name}` : tool.kind === 'shell' ? `shell ${tool.name}` : tool.name;
  const result = tool.status ? ` → ${tool.status}${tool.output ? `: ${tool.output}` : ''}` : ' (running)';
  return oneLine(`${who}${result}`, max);
}

/** The event detail worth showing in one line (pane, native id, error, stale field…). */
export function eventDetail(e: EventRecord): string {
  const d = e.detail ?? {};
  const parts: string[] = [];
  for (const key of ['pane', 'nativeSessionId', 'kind', 'message', 'field', 'expected', 'actual', 'screen'] as const) {
    const v = d[key];
    if (v === undefined || v === null || v === '') continue;
    parts.push(`${key}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  }
  return parts.join(' ');
}

/**
 * The last `rows` lines of a screen capture for a preview: trailing spaces and blank lines
 * dropped, and each run of blank lines squeezed to one (full-screen CLIs leave a wide gap
 * between the conversation and their input box).
 */
export function screenTail(screen: string, rows: number): string[] {
  const lines = screen.replace(/\s+$/, '').split('\n').map((l) => l.replace(/\s+$/, ''));
  const squeezed = lines.filter((l, i) => l !== '' || (i > 0 && lines[i - 1] !== ''));
  return rows <= 0 ? [] : squeezed.slice(-rows);
}

export function turnSummary(turn: TurnRecord, max = 80): string {
  if (turn.answer) return oneLine(turn.answer, max);
  if (turn.error) return oneLine(`[${turn.error.kind}] ${turn.error.message}`, max);
  return '';
}

/** Colour is on unless NO_COLOR is set to anything non-empty (https://no-color.org). */
export function colorEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return !env.NO_COLOR;
}

/** The certification result of a pinned CLI version, one phrase per mode. */
export function certificationText(results: CertificationInfo[] | null | undefined, now: number): string {
  if (!results || results.length === 0) return 'none recorded (see cal certify)';
  return results
    .map((r) => {
      const when = `${age(r.lastRunAt, now)} ago`;
      if (r.fail > 0) return `${r.mode}: NO, failing ${r.failing.slice(0, 3).join(', ')}${r.failing.length > 3 ? ', …' : ''} (${r.pass} pass, ${r.fail} fail, ${when})`;
      if (r.certified) return `${r.mode}: yes (${r.pass} pass${r.skip ? `, ${r.skip} skipped` : ''}, ${when})`;
      return `${r.mode}: incomplete (${r.pass} pass, ${r.missing.length} not run, ${when})`;
    })
    .join(' · ');
}

/**
 * The handle listing as people read it, for `cal inspect` and the TUI alike (pure: no Ink). Its
 * columns agree with each other (issue 41): STATUS is never `idle` while the last turn is in
 * flight, UPDATED is the last turn's last activity, and rows come newest activity first.
 */

const ended = new Set<TurnRecord['status']>(['completed', 'failed', 'interrupted', 'lost']);

/** A turn not settled yet (queued, waiting for the lock, sending, running). */
export function inFlight(turn: TurnRecord | null): boolean {
  return turn !== null && !ended.has(turn.status);
}

/** STATUS: `active` while the last turn is in flight, whatever the handle last recorded. */
export function shownStatus(s: HandleSummary): string {
  return inFlight(s.lastTurn) ? 'active' : s.handle.provider.status;
}

/** UPDATED: when the last turn last changed, or the handle when it has none. */
export function lastActivity(s: HandleSummary): string {
  return s.lastTurn?.updatedAt ?? s.handle.updatedAt;
}

/** PANE: `alive`, `gone`, or `-` for a session with no pane (structured, API). */
export function paneText(s: HandleSummary): string {
  if (s.handle.provider.transport !== 'tmux') return '-';
  return s.paneAlive ? 'alive' : 'gone';
}

export interface ListingFilter {
  /** The real path of a working directory: only the handles started there. */
  cwd?: string | undefined;
  provider?: string | undefined;
  /** Only the handles with a live pane or a turn in flight. */
  live?: boolean | undefined;
}

/** The handles the filter keeps, newest activity first (ties by id, so the order is stable). */
export function listing(summaries: readonly HandleSummary[], filter: ListingFilter = {}): HandleSummary[] {
  return summaries
    .filter((s) => filter.cwd === undefined || s.handle.config.workingDir.realPath === filter.cwd)
    .filter((s) => filter.provider === undefined || s.handle.provider.provider === filter.provider)
    .filter((s) => !filter.live || s.paneAlive || inFlight(s.lastTurn))
    .sort((a, b) => lastActivity(b).localeCompare(lastActivity(a)) || a.handle.id.localeCompare(b.handle.id));
}

/** The plain listing's rows, the header first. */
export function listingRows(summaries: readonly HandleSummary[]): string[][] {
  return [
    ['HANDLE', 'NAME', 'PROVIDER', 'CLI', 'TRANSPORT', 'PANE', 'STATUS', 'LAST TURN', 'UPDATED', 'CWD'],
    ...summaries.map((s) => [
      s.handle.id,
      s.handle.name ?? '-',
      s.handle.provider.provider,
      s.handle.provider.cli?.version ?? '-',
      s.handle.provider.transport,
      paneText(s),
      shownStatus(s),
      s.lastTurn?.status ?? '-',
      lastActivity(s),
      s.handle.config.workingDir.realPath,
    ]),
  ];
}
