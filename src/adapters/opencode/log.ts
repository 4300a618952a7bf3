import { promises as fs } from 'node:fs';
import path from 'node:path';
import { z } from '../../util/zod.js';

/**
 * OpenCode's own log, `<data dir>/log/opencode.log` (1.18.33, written by the TUI and `opencode
 * run` alike at its default level): one `key=value` line an event. While a model request fails
 * with a status it retries (429, 5xx, connection errors), OpenCode records nothing in its store
 * for up to about a minute (5 retries, backoff from 2 s doubling, capped at 30 s: measured in the
 * binary); only its log says so, once an attempt:
 *
 *     timestamp=2026-12-06T02:49:15.111Z level=ERROR run=e845fd3a message="stream error"
 *     … session.id=ses_… small=false … error.error="AI_APICallError: Mock internal server error"
 *
 * cal copies those lines of a session into its mirror as `retry` rows (store.ts), so the turn
 * reader can fail a turn whose model keeps failing (turn.ts) from OpenCode's own record.
 * `small=true` is the title request, not the turn.
 */
export const RetryRow = z.object({
  kind: z.literal('retry'),
  /** When OpenCode logged the failed attempt (ms). */
  at: z.number(),
  error: z.string(),
});
export type RetryRow = z.infer<typeof RetryRow>;

/** How far back the first read of a process looks into the log (it is shared by every session). */
const FIRST_READ_BYTES = 1 << 20;

export function opencodeLogFile(dataDir: string): string {
  return path.join(dataDir, 'log', 'opencode.log');
}

/** A `key=value` field of a log line: bare, or quoted with JSON escapes. */
function field(line: string, key: string): string | null {
  const at = line.indexOf(` ${key}=`);
  if (at < 0) return null;
  const rest = line.slice(at + key.length + 2);
  if (!rest.startsWith('"')) return rest.split(' ')[0] ?? '';
  const quoted = /^"(?:[^"\\]|\\.)*"/.exec(rest);
  if (!quoted) return null;
  try {
    const value: unknown = JSON.parse(quoted[0]);
    return typeof value === 'string' ? value : null;
  } catch {
    return quoted[0].slice(1, -1);
  }
}

/** The failed model attempts of a session's turns (not its title request) in these log lines. */
export function retriesIn(text: string, sessionId: string): RetryRow[] {
  const out: RetryRow[] = [];
  for (const line of text.split('\n')) {
    if (!line.includes(`session.id=${sessionId} `) && !line.endsWith(`session.id=${sessionId}`)) continue;
    if (field(line, 'message') !== 'stream error' || field(line, 'small') === 'true') continue;
    const at = Date.parse(field(line, 'timestamp') ?? line.slice('timestamp='.length).split(' ')[0] ?? '');
    if (Number.isNaN(at)) continue;
    out.push({ kind: 'retry', at, error: field(line, 'error.error') ?? field(line, 'error') ?? 'the model request failed' });
  }
  return out;
}

/**
 * The log's lines from `offset` on (null: this process has not read it yet, so the last
 * FIRST_READ_BYTES), and the offset to read from next. A log that shrank was started again.
 */
export async function readLog(file: string, offset: number | null): Promise<{ text: string; offset: number }> {
  let handle;
  try {
    handle = await fs.open(file, 'r');
  } catch {
    return { text: '', offset: 0 };
  }
  try {
    const { size } = await handle.stat();
    let from = offset === null ? Math.max(0, size - FIRST_READ_BYTES) : offset;
    if (from > size) from = 0;
    const buf = Buffer.alloc(size - from);
    if (buf.length > 0) await handle.read(buf, 0, buf.length, from);
    // Only whole lines: the rest is read next time.
    const end = buf.lastIndexOf(0x0a) + 1;
    return { text: buf.subarray(0, end).toString('utf8'), offset: from + end };
  } finally {
    await handle.close();
  }
}
