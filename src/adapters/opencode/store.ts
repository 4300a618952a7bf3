import { constants as fsConstants, promises as fs } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { z } from '../../util/zod.js';
import { CalError } from '../../errors.js';
import { dataDir } from './home.js';
import { envName, mirrorKind, type OpencodeFlavour } from './flavour.js';
import { bunQuery, CLI_HELPER_TIMEOUT_MS, type StoreCli } from './bun-sqlite.js';
import { opencodeLogFile, readLog, retriesIn, RetryRow } from './log.js';
import { mcpToolOf } from './tool-names.js';
import { timingMark } from '../../util/timing.js';
import { runExeca } from '../../util/spawn.js';
import type { PinnedCli } from '../../handles/schema.js';

/**
 * OpenCode's session store (1.18.33): the SQLite database `opencode.db`, tables `session`,
 * `message` (id, session_id, time_created, time_updated, data JSON) and `part` (id, message_id,
 * session_id, …, data JSON). Read with read-only SELECTs through the CLI's own binary: its Bun
 * runtime's `bun:sqlite` on the file `opencode db path` names (bun-sqlite.ts, tens of
 * milliseconds), else `opencode db <query> --format json` (about a second of CPU). Either works on
 * every Node cal supports (Node 20 has no `node:sqlite`) and reads the write-ahead log too.
 *
 * cal's engine follows a transcript as an append-only JSONL file, so cal keeps a mirror of each
 * session: `<opencode data dir>/cal-transcripts/<session id>.jsonl`. Its first line names the
 * session and how to reach the store; every later line is one row (a message or a part) as the
 * store held it, appended again whenever the row changed (the observer takes the latest).
 *
 * The mirror sits in OpenCode's data folder, where the agent and anything else running as the
 * user can write, so its header is not trusted to say what to run: the store is read only through
 * the CLI the handle pinned (cal's state directory), a header naming another executable or any
 * variable outside the store's own (STORE_ENV) is refused, and the file is opened without
 * following a link and without blocking (a FIFO in its place is refused, not waited on).
 *
 * Kilo Code CLI keeps this store as it is (7.7.7, measured: the same tables and rows, ids of the
 * same form) under its own names (`kilo.db`, `KILO_DB`, `kilo db`, `kilo import`): every function
 * here takes the flavour (flavour.ts), and a mirror says whose it is (`opencode-mirror`,
 * `kilo-mirror`), so one CLI's adapter never reads a mirror as the other's.
 */
const SESSION_ID = /^ses_[A-Za-z0-9]+$/;

export function isSessionId(id: string): boolean {
  return SESSION_ID.test(id);
}

/** The environment `<command> db` needs to find the same database (never a key). */
function storeEnvNames(flavour: OpencodeFlavour): string[] {
  return [
    'HOME',
    'PATH',
    'XDG_DATA_HOME',
    'XDG_CONFIG_HOME',
    'XDG_STATE_HOME',
    'XDG_CACHE_HOME',
    envName(flavour, 'DB'),
    envName(flavour, 'DISABLE_CHANNEL_DB'),
    envName(flavour, 'CONFIG'),
    ...Object.keys(flavour.quietEnv),
  ];
}

const MirrorHeaderFields = z.object({
  kind: z.enum(['opencode-mirror', 'kilo-mirror']),
  sessionId: z.string().regex(SESSION_ID),
  /** The CLI that reads the store: must be the handle's pinned CLI (checked, never run as given). */
  executable: z.string(),
  env: z.record(z.string(), z.string()),
  /**
   * The MCP servers cal configured for the session (their names in cal's file): OpenCode names
   * their tools `<server>_<tool>`, and each such tool part is mirrored with its server and tool
   * noted (`StoreRow.mcpTool`).
   */
  mcpServers: z.array(z.string()).default([]),
});
export type MirrorHeader = z.input<typeof MirrorHeaderFields>;

/** A mirror header of this flavour, naming no variable outside its store's own. */
function mirrorHeaderOf(flavour: OpencodeFlavour) {
  const names = storeEnvNames(flavour);
  return MirrorHeaderFields.refine((h) => h.kind === mirrorKind(flavour), { message: `is not a ${flavour.label} mirror` }).refine(
    (h) => Object.keys(h.env).every((name) => names.includes(name)),
    { message: "names a variable outside the store's own" },
  );
}

export const StoreRow = z.object({
  kind: z.enum(['message', 'part']),
  id: z.string(),
  messageId: z.string(),
  created: z.number(),
  updated: z.number(),
  data: z.string(),
  /**
   * cal's note on a tool part of an MCP server's tool (OpenCode names it `<server>_<tool>`): the
   * server cal configured and the tool, mapped when the row is mirrored (the header's servers).
   */
  mcpTool: z.object({ server: z.string(), name: z.string() }).optional(),
});
export type StoreRow = z.infer<typeof StoreRow>;


export function storeEnv(flavour: OpencodeFlavour, env: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of storeEnvNames(flavour)) if (env[name] !== undefined) out[name] = env[name] as string;
  return out;
}

/**
 * A query fails while another OpenCode process creates or migrates the database (measured: a
 * fresh TUI and `opencode db` racing on a new store, "table … already exists"): tried again.
 */
const QUERY_ATTEMPTS = 4;

async function query(flavour: OpencodeFlavour, cli: StoreCli, env: Record<string, string>, sql: string): Promise<unknown[]> {
  // Each read starts the binary (its Bun): the bench counts them per turn (bench/clis.mjs).
  timingMark('store-read');
  const executable = cli.realPath;
  const fast = await bunQuery(cli, env, sql, mirrorDir(flavour, env));
  if (fast) return fast;
  let run = await runExeca(executable, ['db', sql, '--format', 'json'], { env, reject: false, timeout: CLI_HELPER_TIMEOUT_MS });
  // Only a run that failed is tried again (the race above), never one that ran out of time.
  for (let attempt = 1; run.exitCode !== 0 && !run.timedOut && attempt < QUERY_ATTEMPTS; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 300 * attempt));
    run = await runExeca(executable, ['db', sql, '--format', 'json'], { env, reject: false, timeout: CLI_HELPER_TIMEOUT_MS });
  }
  if (run.exitCode !== 0) throw new CalError('turn_failed', `${flavour.command} db failed (exit ${run.exitCode ?? run.signal}): ${String(run.stderr).slice(-300)}`);
  const text = String(run.stdout).trim();
  if (!text) return [];
  try {
    const rows: unknown = JSON.parse(text);
    return Array.isArray(rows) ? rows : [];
  } catch {
    throw new CalError('cli_unsupported', `${flavour.command} db printed no JSON array: ${text.slice(0, 200)}`);
  }
}

/** Every message and part row of a session, in creation order. */
export async function sessionRows(flavour: OpencodeFlavour, cli: StoreCli, env: Record<string, string>, sessionId: string): Promise<StoreRow[]> {
  if (!SESSION_ID.test(sessionId)) throw new CalError('internal', `not an ${flavour.label} session id: ${sessionId}`);
  const sql =
    `select 'message' as kind, id, id as messageId, time_created as created, time_updated as updated, data from message where session_id = '${sessionId}' ` +
    `union all select 'part' as kind, id, message_id as messageId, time_created as created, time_updated as updated, data from part where session_id = '${sessionId}' ` +
    'order by created, id';
  return (await query(flavour, cli, env, sql)).flatMap((r) => {
    const row = StoreRow.safeParse(r);
    return row.success ? [row.data] : [];
  });
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * A new session id in OpenCode's own form (1.18.33, its `Identifier.descending("session")`):
 * `ses_`, 12 hex digits of the bitwise NOT of `ms * 4096 + 1` (newer sessions sort first), then
 * 14 random base-62 characters.
 */
export function newSessionId(now = Date.now(), random: (n: number) => Buffer = randomBytes): string {
  const time = (~(BigInt(now) * 4096n + 1n) & 0xffffffffffffn).toString(16).padStart(12, '0');
  const tail = [...random(14)].map((b) => BASE62[b % 62]).join('');
  return `ses_${time}${tail}`;
}

/**
 * The OpenCode id cal gives the session of a handle's first structured turn, derived from the id
 * cal chose for the handle up front (so recover finds that session by the handle alone): the same
 * form as `newSessionId`, its digits taken from a hash of that id.
 */
export function sessionIdFor(pendingId: string): string {
  const hash = createHash('sha256').update(pendingId).digest();
  const tail = [...hash.subarray(6, 20)].map((b) => BASE62[b % 62]).join('');
  return `ses_${hash.subarray(0, 6).toString('hex')}${tail}`;
}

/**
 * Makes an empty session with the id cal chose, in the working directory `cwd`, the way OpenCode
 * itself would (title left to OpenCode to generate: its default "New session - <ISO time>"):
 * OpenCode's TUI takes an id only with `--session`, for a session its store holds, and
 * `opencode import` keeps the id of the session it is given (1.18.33, measured), taking the
 * project and directory from where it runs. So two sessions started at once in one folder each
 * know their own id before anything is sent.
 */
export async function createSession(flavour: OpencodeFlavour, cli: { realPath: string; version: string }, env: Record<string, string>, cwd: string, sessionId: string, now = Date.now()): Promise<void> {
  if (!SESSION_ID.test(sessionId)) throw new CalError('internal', `not an ${flavour.label} session id: ${sessionId}`);
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), `cal-${flavour.command}-`));
  const file = path.join(dir, 'session.json');
  try {
    const info = { id: sessionId, slug: `cal-${sessionId.slice(-6).toLowerCase()}`, projectID: 'global', directory: cwd, title: `New session - ${new Date(now).toISOString()}`, version: cli.version, time: { created: now, updated: now } };
    await fs.writeFile(file, JSON.stringify({ info, messages: [] }), { mode: 0o600 });
    const importIt = () => runExeca(cli.realPath, ['import', file], { env, cwd, reject: false, timeout: CLI_HELPER_TIMEOUT_MS });
    // Two OpenCode processes on a store that does not exist yet race to create its tables
    // (measured: "table … already exists"), as for `query`: tried again.
    let run = await importIt();
    for (let attempt = 1; run.exitCode !== 0 && !run.timedOut && attempt < QUERY_ATTEMPTS; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 300 * attempt));
      run = await importIt();
    }
    if (run.exitCode !== 0 || !String(run.stdout).includes(sessionId)) {
      throw new CalError('turn_failed', `${flavour.command} import could not make session ${sessionId} (exit ${run.exitCode ?? run.signal}): ${String(run.stderr || run.stdout).slice(-300)}`);
    }
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/** Whether a session exists in the store. */
export async function sessionExists(flavour: OpencodeFlavour, cli: StoreCli, env: Record<string, string>, sessionId: string): Promise<boolean> {
  if (!SESSION_ID.test(sessionId)) return false;
  return (await query(flavour, cli, env, `select id from session where id = '${sessionId}'`)).length > 0;
}

/** cal's folder in the CLI's data folder: the sessions' mirrors, and where `db path`'s answer is kept (bun-sqlite.ts). */
function mirrorDir(flavour: OpencodeFlavour, env: Record<string, string>): string {
  return path.join(dataDir(flavour, env), 'cal-transcripts');
}

export function mirrorPath(flavour: OpencodeFlavour, env: Record<string, string>, sessionId: string): string {
  return path.join(mirrorDir(flavour, env), `${sessionId}.jsonl`);
}

const rowKey = (r: StoreRow) => `${r.kind}:${r.id}:${r.updated}:${r.data.length}`;
const retryKey = (r: RetryRow) => `retry:${r.at}:${r.error}`;

/**
 * A query can start the whole CLI (`opencode db`: about a second of CPU, measured on 1.18.33), and
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
interface SyncState {
  running: Promise<void> | null;
  /** When the last sync ended (the store queried or not). */
  doneAt: number;
  /** When the store was last queried. */
  queriedAt: number;
  walStamp: string | null;
  /** Where this process reads OpenCode's log on from (log.ts); null before its first read. */
  logOffset: number | null;
}
const syncs = new Map<string, SyncState>();

function databaseOf(flavour: OpencodeFlavour, env: Record<string, string>): string {
  const named = env[envName(flavour, 'DB')];
  if (named && path.isAbsolute(named)) return named;
  return path.join(dataDir(flavour, env), named || flavour.database);
}

/**
 * The mirror's text, or null when there is none. Opened without following a link and without
 * blocking, and refused unless it is a regular file: a FIFO put in its place would otherwise hold
 * every read of the turn (and cal) for good.
 */
async function readMirror(flavour: OpencodeFlavour, file: string): Promise<string | null> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    throw new CalError('resume_unavailable', `${file} cannot be read as cal's mirror of an ${flavour.label} session (${code === 'ELOOP' ? 'it is a symbolic link' : (code ?? String(err))})`);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new CalError('resume_unavailable', `${file} is not a regular file (${st.isFIFO() ? 'a FIFO' : 'something else'}), so not cal's mirror of an ${flavour.label} session`);
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}

async function walStamp(flavour: OpencodeFlavour, file: string): Promise<string | null> {
  try {
    const text = await readMirror(flavour, file);
    if (text === null) return null;
    const header = mirrorHeaderOf(flavour).safeParse(JSON.parse(text.slice(0, text.indexOf('\n'))));
    if (!header.success) return null;
    const st = await fs.stat(`${databaseOf(flavour, header.data.env)}-wal`);
    return `${st.size}:${st.mtimeMs}`;
  } catch {
    return null;
  }
}

/** A tool part of one of the session's MCP servers, with the server and tool noted (`StoreRow.mcpTool`). */
export function withMcpTool(row: StoreRow, servers: readonly string[]): StoreRow {
  if (row.kind !== 'part' || servers.length === 0) return row;
  let tool: unknown;
  try {
    const data: unknown = JSON.parse(row.data);
    tool = data !== null && typeof data === 'object' && (data as { type?: unknown }).type === 'tool' ? (data as { tool?: unknown }).tool : undefined;
  } catch {
    return row;
  }
  const mcp = typeof tool === 'string' ? mcpToolOf(tool, servers) : null;
  return mcp ? { ...row, mcpTool: mcp } : row;
}

/**
 * Creates the mirror (its header) if missing; appends the rows it does not hold yet, and the
 * session's failed model attempts OpenCode logged since the last sync (log.ts), which it records
 * nowhere in its store.
 */
export async function syncMirror(flavour: OpencodeFlavour, file: string, cli: PinnedCli, header?: MirrorHeader): Promise<void> {
  const state = syncs.get(file) ?? { running: null, doneAt: 0, queriedAt: 0, walStamp: null, logOffset: null };
  syncs.set(file, state);
  if (state.running) return state.running;
  if (!header && Date.now() - state.doneAt < MIN_SYNC_GAP_MS) return;
  const stamp = header ? null : await walStamp(flavour, file);
  const queryStore = header !== undefined || stamp === null || stamp !== state.walStamp || Date.now() - state.queriedAt >= MAX_SKIP_MS;
  state.running = syncMirrorNow(flavour, file, cli, header, state, queryStore).finally(() => {
    state.running = null;
    state.doneAt = Date.now();
    if (queryStore) {
      state.queriedAt = state.doneAt;
      state.walStamp = stamp;
    }
  });
  return state.running;
}

async function syncMirrorNow(flavour: OpencodeFlavour, file: string, cli: PinnedCli, header: MirrorHeader | undefined, state: SyncState, queryStore: boolean): Promise<void> {
  let text = await readMirror(flavour, file);
  if (text === null) {
    if (!header) return;
    await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    text = JSON.stringify(header) + '\n';
    // Never through a link or over a file someone put there meanwhile.
    await fs.writeFile(file, text, { mode: 0o600, flag: 'wx' });
  }
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  let first: unknown = null;
  try {
    first = JSON.parse(lines[0] ?? 'null');
  } catch {
    first = null;
  }
  const parsed = mirrorHeaderOf(flavour).safeParse(first);
  if (!parsed.success) throw new CalError('resume_unavailable', `${file} is not a cal mirror of an ${flavour.label} session`);
  if (parsed.data.executable !== cli.realPath) {
    throw new CalError('resume_unavailable', `${file} names ${JSON.stringify(parsed.data.executable)} to read ${flavour.label}'s store, not the CLI this session pinned (${cli.realPath}): cal runs only the CLI it pinned`);
  }
  const seen = new Set<string>();
  for (const line of lines.slice(1)) {
    const value: unknown = JSON.parse(line);
    const row = StoreRow.safeParse(value);
    if (row.success) seen.add(rowKey(row.data));
    const retry = RetryRow.safeParse(value);
    if (retry.success) seen.add(retryKey(retry.data));
  }
  const rows = queryStore ? await sessionRows(flavour, cli, parsed.data.env, parsed.data.sessionId) : [];
  // Parts before messages, each in the order they were last written: a reply's message row says
  // the turn ended (`time.completed`, `finish`) only after its parts were written, and the engine
  // stops reading at the record that ends the turn, so those parts must come before it.
  const fresh = rows
    .filter((r) => !seen.has(rowKey(r)))
    .sort((a, b) => (a.kind === b.kind ? a.updated - b.updated : a.kind === 'part' ? -1 : 1))
    .map((r) => withMcpTool(r, parsed.data.mcpServers));
  const log = await readLog(opencodeLogFile(dataDir(flavour, parsed.data.env)), state.logOffset);
  state.logOffset = log.offset;
  const retries = retriesIn(log.text, parsed.data.sessionId).filter((r) => !seen.has(retryKey(r)));
  const out = [...fresh, ...retries];
  if (out.length > 0) await fs.appendFile(file, out.map((r) => JSON.stringify(r) + '\n').join(''));
}
