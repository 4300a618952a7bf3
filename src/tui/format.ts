import type { PaneView } from '../sessions/agent-sessions.js';
import type { CertificationInfo } from './source.js';
import type { EventRecord } from '../state/store.js';
import type { ToolActivity, TurnRecord } from '../state/turns.js';

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
  const flat = text.replace(/\s+/g, ' ').trim();
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
