import { constants as fsConstants, promises as fs } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { z } from '../../util/zod.js';

/**
 * Cline CLI's own record of a session (3.0.65, measured; docs/cline.md): in its sessions folder,
 * `<id>/<id>.json` (the manifest: `status` `running` while a turn runs, `idle` once it ended in
 * a TUI, a final status when the process ends; `pid`, `cwd`, `started_at`) and
 * `<id>/<id>.messages.json` (the conversation, rewritten whole as it grows: user prompts wrapped
 * in `<user_input mode="act">…</user_input>`, assistant messages of `text` and `tool_use`
 * blocks, tool results as user messages of `tool_result` blocks).
 *
 * cal's engine follows a transcript as an append-only JSONL file, so cal keeps a mirror of each
 * session beside its files, `<id>/cal-transcript.jsonl`: a header line, then each message as
 * Cline holds it (again whenever it changed; the observer takes the latest of each index), and a
 * status line whenever the manifest's status or the number of messages changed. The files to
 * read are found from the mirror's own place, never from anything written in it.
 */
const SESSION_ID = /^[A-Za-z0-9_-]{1,80}$/;
export const MIRROR_NAME = 'cal-transcript.jsonl';
/** A conversation file larger than this is not read (Cline's are kilobytes to a few megabytes). */
const MAX_FILE_BYTES = 64 * 1024 * 1024;

export const Manifest = z
  .object({
    session_id: z.string(),
    pid: z.number().nullable().optional(),
    started_at: z.string().optional(),
    status: z.string(),
    cwd: z.string().optional(),
    interactive: z.boolean().optional(),
  })
  .passthrough();
export type Manifest = z.infer<typeof Manifest>;

const Block = z.object({ type: z.string() }).passthrough();
export const ClineMessage = z
  .object({
    id: z.string().optional(),
    role: z.string(),
    content: z.union([z.string(), z.array(Block)]),
    ts: z.number().optional(),
  })
  .passthrough();
export type ClineMessage = z.infer<typeof ClineMessage>;
const MessagesFile = z.object({ messages: z.array(ClineMessage) }).passthrough();

export const MirrorRecord = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('cline-mirror'), sessionId: z.string() }),
  z.object({ kind: z.literal('message'), index: z.number(), hash: z.string(), timestamp: z.string().optional(), message: ClineMessage }),
  z.object({ kind: z.literal('status'), status: z.string(), messages: z.number(), timestamp: z.string() }),
]);
export type MirrorRecord = z.infer<typeof MirrorRecord>;

export function isSessionId(id: string): boolean {
  return SESSION_ID.test(id);
}

export function sessionFiles(sessionsDir: string, id: string): { dir: string; manifest: string; messages: string; mirror: string } {
  const dir = path.join(sessionsDir, id);
  return { dir, manifest: path.join(dir, `${id}.json`), messages: path.join(dir, `${id}.messages.json`), mirror: path.join(dir, MIRROR_NAME) };
}

/** A file's text, opened without following a link or blocking on a FIFO; null when absent or not a plain file. */
async function readPlain(file: string): Promise<string | null> {
  let handle: fs.FileHandle | null = null;
  try {
    handle = await fs.open(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | fsConstants.O_NOFOLLOW);
    const st = await handle.stat();
    if (!st.isFile() || st.size > MAX_FILE_BYTES) return null;
    return await handle.readFile('utf8');
  } catch {
    return null;
  } finally {
    await handle?.close();
  }
}

async function readJson<T>(file: string, schema: z.ZodType<T, z.ZodTypeDef, unknown>): Promise<T | null> {
  const text = await readPlain(file);
  if (text === null) return null;
  try {
    const parsed = schema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    // Cline rewrites the file in place: a read in the middle of a write is tried again later.
    return null;
  }
}

export function readManifest(file: string): Promise<Manifest | null> {
  return readJson(file, Manifest);
}

export async function readMessages(file: string): Promise<ClineMessage[] | null> {
  return (await readJson(file, MessagesFile))?.messages ?? null;
}

function hashOf(message: ClineMessage): string {
  return createHash('sha256').update(JSON.stringify(message)).digest('hex').slice(0, 16);
}

/** What a mirror already holds: the hash of each message index, and the last status line. */
interface MirrorState {
  hashes: Map<number, string>;
  status: string | null;
}

async function mirrorState(file: string): Promise<MirrorState | null> {
  const text = await readPlain(file);
  if (text === null) return null;
  const state: MirrorState = { hashes: new Map(), status: null };
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let rec: MirrorRecord;
    try {
      const parsed = MirrorRecord.safeParse(JSON.parse(line));
      if (!parsed.success) continue;
      rec = parsed.data;
    } catch {
      continue;
    }
    if (rec.kind === 'message') state.hashes.set(rec.index, rec.hash);
    else if (rec.kind === 'status') state.status = `${rec.status}/${rec.messages}`;
  }
  return state;
}

/**
 * Appends to the mirror `file` what the session's files hold that it does not yet: the messages
 * first (read before the manifest: Cline marks a turn running before it records its prompt, and
 * idle after its last message), then the status.
 */
export async function syncMirror(file: string): Promise<void> {
  const dir = path.dirname(file);
  const id = path.basename(dir);
  if (path.basename(file) !== MIRROR_NAME || !isSessionId(id)) return;
  const files = sessionFiles(path.dirname(dir), id);
  let state = await mirrorState(file);
  const out: MirrorRecord[] = [];
  if (state === null) {
    state = { hashes: new Map(), status: null };
    out.push({ kind: 'cline-mirror', sessionId: id });
  }
  const messages = await readMessages(files.messages);
  const manifest = await readManifest(files.manifest);
  if (messages) {
    messages.forEach((message, index) => {
      const hash = hashOf(message);
      if (state.hashes.get(index) === hash) return;
      out.push({ kind: 'message', index, hash, ...(message.ts ? { timestamp: new Date(message.ts).toISOString() } : {}), message });
    });
  }
  if (manifest && messages) {
    const key = `${manifest.status}/${messages.length}`;
    if (key !== state.status) out.push({ kind: 'status', status: manifest.status, messages: messages.length, timestamp: new Date().toISOString() });
  }
  if (out.length === 0) return;
  const fd = await fs.open(file, fsConstants.O_WRONLY | fsConstants.O_APPEND | fsConstants.O_CREAT | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK, 0o600);
  try {
    await fd.appendFile(out.map((r) => `${JSON.stringify(r)}\n`).join(''));
  } finally {
    await fd.close();
  }
}

/** The text blocks of a message, joined. */
export function textOf(message: ClineMessage): string {
  if (typeof message.content === 'string') return message.content;
  return message.content.flatMap((b) => (b.type === 'text' && typeof b.text === 'string' ? [b.text] : [])).join('');
}

/** A prompt as the person typed it: Cline stores it inside `<user_input mode="…">…</user_input>`. */
export function promptText(message: ClineMessage): string | null {
  if (message.role !== 'user') return null;
  if (Array.isArray(message.content) && message.content.some((b) => b.type === 'tool_result')) return null;
  const text = textOf(message);
  const m = /^<user_input(?: [^>]*)?>([\s\S]*)<\/user_input>$/.exec(text.trim());
  return m ? (m[1] as string) : text;
}

/**
 * The session a launch of cal's made, by the mark cal put in its environment (`launchMark`):
 * Cline chooses the id, and two TUIs started at once in one folder with the same message differ
 * only by their process. Its manifest names the process (`pid`), whose environment holds the mark
 * (Linux: /proc/<pid>/environ). Where no process environment can be read (not Linux), the one
 * session of that folder started since `since` whose conversation holds the message, if only one
 * does. Null until a session whose conversation holds `message` is found.
 */
export async function findLaunchedSession(sessionsDir: string, cwd: string, mark: string, holds: (prompt: string) => boolean, since: Date): Promise<string | null> {
  let names: string[];
  try {
    names = await fs.readdir(sessionsDir);
  } catch {
    return null;
  }
  const byEnviron = (await readPlain('/proc/self/environ')) !== null;
  const found: string[] = [];
  for (const id of names) {
    if (!isSessionId(id)) continue;
    const files = sessionFiles(sessionsDir, id);
    const manifest = await readManifest(files.manifest);
    if (!manifest || manifest.session_id !== id || typeof manifest.pid !== 'number') continue;
    if (manifest.cwd !== undefined && manifest.cwd !== cwd) continue;
    if (byEnviron) {
      const environ = await readPlain(`/proc/${manifest.pid}/environ`);
      if (environ === null || !environ.split('\0').includes(mark)) continue;
    } else if (!manifest.started_at || Date.parse(manifest.started_at) < since.getTime() - 60_000) {
      continue;
    }
    const messages = await readMessages(files.messages);
    if (messages?.some((m) => { const p = promptText(m); return p !== null && holds(p); })) found.push(id);
  }
  return found.length === 1 ? (found[0] as string) : null;
}
