import { promises as fs } from 'node:fs';
import path from 'node:path';
import { z } from '../../util/zod.js';
import { CalError } from '../../errors.js';
import { opencodeDataDir } from './home.js';

/**
 * OpenCode's session store (1.18.33): the SQLite database `opencode.db`, tables `session`,
 * `message` (id, session_id, time_created, time_updated, data JSON) and `part` (id, message_id,
 * session_id, …, data JSON). Read through the CLI's own `opencode db <query> --format json`
 * (read-only SELECTs): it works on every Node cal supports (Node 20 has no `node:sqlite`) and
 * always opens the database, at the path and schema, of the release that wrote it.
 *
 * cal's engine follows a transcript as an append-only JSONL file, so cal keeps a mirror of each
 * session: `<opencode data dir>/cal-transcripts/<session id>.jsonl`. Its first line names the
 * session and how to reach the store; every later line is one row (a message or a part) as the
 * store held it, appended again whenever the row changed (the observer takes the latest).
 */
const SESSION_ID = /^ses_[A-Za-z0-9]+$/;

export const MirrorHeader = z.object({
  kind: z.literal('opencode-mirror'),
  sessionId: z.string().regex(SESSION_ID),
  executable: z.string(),
  env: z.record(z.string(), z.string()),
});
export type MirrorHeader = z.infer<typeof MirrorHeader>;

export const StoreRow = z.object({
  kind: z.enum(['message', 'part']),
  id: z.string(),
  messageId: z.string(),
  created: z.number(),
  updated: z.number(),
  data: z.string(),
});
export type StoreRow = z.infer<typeof StoreRow>;

const SessionRow = z.object({ id: z.string(), directory: z.string(), time_created: z.number() });

/** The environment `opencode db` needs to find the same database (never a key). */
const STORE_ENV = [
  'HOME',
  'PATH',
  'XDG_DATA_HOME',
  'XDG_CONFIG_HOME',
  'XDG_STATE_HOME',
  'XDG_CACHE_HOME',
  'OPENCODE_DB',
  'OPENCODE_DISABLE_CHANNEL_DB',
  'OPENCODE_CONFIG',
  'OPENCODE_DISABLE_AUTOUPDATE',
  'OPENCODE_DISABLE_MODELS_FETCH',
];

export function storeEnv(env: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of STORE_ENV) if (env[name] !== undefined) out[name] = env[name] as string;
  return out;
}

/**
 * A query fails while another OpenCode process creates or migrates the database (measured: a
 * fresh TUI and `opencode db` racing on a new store, "table … already exists"): tried again.
 */
const QUERY_ATTEMPTS = 4;

async function query(executable: string, env: Record<string, string>, sql: string): Promise<unknown[]> {
  const { execa } = await import('execa');
  let run = await execa(executable, ['db', sql, '--format', 'json'], { env, extendEnv: false, reject: false, stdin: 'ignore', timeout: 30_000 });
  for (let attempt = 1; run.exitCode !== 0 && attempt < QUERY_ATTEMPTS; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 300 * attempt));
    run = await execa(executable, ['db', sql, '--format', 'json'], { env, extendEnv: false, reject: false, stdin: 'ignore', timeout: 30_000 });
  }
  if (run.exitCode !== 0) throw new CalError('turn_failed', `opencode db failed (exit ${run.exitCode ?? run.signal}): ${String(run.stderr).slice(-300)}`);
  const text = String(run.stdout).trim();
  if (!text) return [];
  try {
    const rows: unknown = JSON.parse(text);
    return Array.isArray(rows) ? rows : [];
  } catch {
    throw new CalError('cli_unsupported', `opencode db printed no JSON array: ${text.slice(0, 200)}`);
  }
}

/** Sessions of this working directory created at or after `since` (ms), newest first. */
export async function recentSessions(executable: string, env: Record<string, string>, cwd: string, since: number): Promise<string[]> {
  const rows = await query(executable, env, `select id, directory, time_created from session where time_created >= ${Math.floor(since)} order by time_created desc`);
  return rows.flatMap((r) => {
    const row = SessionRow.safeParse(r);
    return row.success && row.data.directory === cwd && SESSION_ID.test(row.data.id) ? [row.data.id] : [];
  });
}

/** Every message and part row of a session, in creation order. */
export async function sessionRows(executable: string, env: Record<string, string>, sessionId: string): Promise<StoreRow[]> {
  if (!SESSION_ID.test(sessionId)) throw new CalError('internal', `not an OpenCode session id: ${sessionId}`);
  const sql =
    `select 'message' as kind, id, id as messageId, time_created as created, time_updated as updated, data from message where session_id = '${sessionId}' ` +
    `union all select 'part' as kind, id, message_id as messageId, time_created as created, time_updated as updated, data from part where session_id = '${sessionId}' ` +
    'order by created, id';
  return (await query(executable, env, sql)).flatMap((r) => {
    const row = StoreRow.safeParse(r);
    return row.success ? [row.data] : [];
  });
}

/** Whether a session exists in the store. */
export async function sessionExists(executable: string, env: Record<string, string>, sessionId: string): Promise<boolean> {
  if (!SESSION_ID.test(sessionId)) return false;
  return (await query(executable, env, `select id from session where id = '${sessionId}'`)).length > 0;
}

export function mirrorPath(env: Record<string, string>, sessionId: string): string {
  return path.join(opencodeDataDir(env), 'cal-transcripts', `${sessionId}.jsonl`);
}

const rowKey = (r: StoreRow) => `${r.kind}:${r.id}:${r.updated}:${r.data.length}`;

/**
 * Each `opencode db` query starts the whole CLI (about a second of CPU, measured on 1.18.33), and
 * the engine reads the transcript many times a second: one sync of a mirror runs at a time, a
 * caller arriving while it runs shares it, and one within `MIN_SYNC_GAP_MS` of the last is skipped.
 */
const MIN_SYNC_GAP_MS = 250;
/**
 * OpenCode writes through SQLite's write-ahead log, and `opencode db` itself touches only the
 * database and its index files (measured): while the log's size and time stay as they were
 * before the last query, nothing was written since and the query is skipped (one runs anyway
 * every `MAX_SKIP_MS`).
 */
const MAX_SKIP_MS = 5000;
const syncs = new Map<string, { running: Promise<void> | null; doneAt: number; walStamp: string | null }>();

function databaseOf(env: Record<string, string>): string {
  if (env.OPENCODE_DB && path.isAbsolute(env.OPENCODE_DB)) return env.OPENCODE_DB;
  return path.join(opencodeDataDir(env), env.OPENCODE_DB || 'opencode.db');
}

async function walStamp(file: string): Promise<string | null> {
  try {
    const text = await fs.readFile(file, 'utf8');
    const header = MirrorHeader.safeParse(JSON.parse(text.slice(0, text.indexOf('\n'))));
    if (!header.success) return null;
    const st = await fs.stat(`${databaseOf(header.data.env)}-wal`);
    return `${st.size}:${st.mtimeMs}`;
  } catch {
    return null;
  }
}

/** Creates the mirror (its header) if missing; appends the rows it does not hold yet. */
export async function syncMirror(file: string, header?: MirrorHeader): Promise<void> {
  const state = syncs.get(file) ?? { running: null, doneAt: 0, walStamp: null };
  syncs.set(file, state);
  if (state.running) return state.running;
  if (!header && Date.now() - state.doneAt < MIN_SYNC_GAP_MS) return;
  const stamp = header ? null : await walStamp(file);
  if (!header && stamp !== null && stamp === state.walStamp && Date.now() - state.doneAt < MAX_SKIP_MS) return;
  state.running = syncMirrorNow(file, header).finally(() => {
    state.running = null;
    state.doneAt = Date.now();
    state.walStamp = stamp;
  });
  return state.running;
}

async function syncMirrorNow(file: string, header?: MirrorHeader): Promise<void> {
  let text: string | null = null;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch {
    if (!header) return;
  }
  if (text === null) {
    await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    text = JSON.stringify(header) + '\n';
    await fs.writeFile(file, text, { mode: 0o600 });
  }
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const parsed = MirrorHeader.safeParse(JSON.parse(lines[0] ?? 'null'));
  if (!parsed.success) throw new CalError('resume_unavailable', `${file} is not a cal mirror of an OpenCode session`);
  const seen = new Set<string>();
  for (const line of lines.slice(1)) {
    const row = StoreRow.safeParse(JSON.parse(line));
    if (row.success) seen.add(rowKey(row.data));
  }
  const rows = await sessionRows(parsed.data.executable, parsed.data.env, parsed.data.sessionId);
  // Parts before messages, each in the order they were last written: a reply's message row says
  // the turn ended (`time.completed`, `finish`) only after its parts were written, and the engine
  // stops reading at the record that ends the turn, so those parts must come before it.
  const fresh = rows.filter((r) => !seen.has(rowKey(r))).sort((a, b) => (a.kind === b.kind ? a.updated - b.updated : a.kind === 'part' ? -1 : 1));
  if (fresh.length > 0) await fs.appendFile(file, fresh.map((r) => JSON.stringify(r) + '\n').join(''));
}
