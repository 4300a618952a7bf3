import { randomBytes } from '../util/random.js';
import { lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { z } from '../util/zod.js';
import { CalError } from '../errors.js';
import { AgentSessionHandle, HandleId, HandleName } from '../handles/schema.js';
import { readHandleAt, readHandleFile } from './handle-file.js';
import { readSettledMark, saveSettledMark, type SettledMark } from './settled-mark.js';
import { EventLogs, eventsSince, type EventRecord } from './event-log.js';
import { appendJsonLine, ensurePrivateDir, readJsonFile, refuseNonDirectory, refuseNonRegular, refuseSymlink, stateWriteError, writeJsonAtomic, type LogCursor } from './fs.js';
import { LockDirectory } from './lock.js';
import { markRemoved, unlessRemoved } from './removed-mark.js';
import { refuseNonDirectoryRoot, resolveStateDir, stateLayout, unusableStateDir, type StateLayout } from './paths.js';
import { TurnRecord, unsentStatuses } from './turns.js';

export type { EventRecord };

/** Handle ids: short, url-safe, lowercase (base36 of random bytes). */
export function newId(length = 10): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = randomBytes(length);
  let out = '';
  for (const b of bytes) out += alphabet[b % alphabet.length];
  return out;
}

/**
 * A handle reference from the command line: an id or a name. Anything that could escape the
 * handles folder (slashes, dots first, NUL) is a usage error before any file is touched.
 */
export function parseHandleRef(ref: string): string {
  if (HandleId.safeParse(ref).success || HandleName.safeParse(ref).success) return ref;
  const shown = JSON.stringify(ref.length > 40 ? `${ref.slice(0, 40)}…` : ref);
  throw new CalError('usage', `${shown} is not a handle id or name (letters, digits, '.', '_', '-'; no paths)`);
}

/** Only the name of a handle file that does not parse as a whole. */
const NameProbe = z.object({ name: z.string().nullable().optional() }).passthrough();

/** Whether a path exists (any kind of file), without following or opening it. */
function existsSyncSafe(file: string): boolean {
  try {
    lstatSync(file);
    return true;
  } catch {
    return false;
  }
}

/**
 * A regular file's identity (device, inode, size, change times), or null for anything else:
 * cal replaces a state file by rename, so any write gives it another.
 */
function fileIdentity(file: string): string | null {
  try {
    const st = lstatSync(file);
    return st.isFile() ? `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}` : null;
  } catch {
    return null;
  }
}

export class StateStore {
  readonly layout: StateLayout;
  readonly locks: LockDirectory;
  private readonly turnDirsChecked = new Set<string>();
  /**
   * Handle files this process parsed whole, by file identity: inspect lists every handle and then
   * the unreadable ones, and a file that has not changed since is not parsed a second time.
   */
  private readonly parsedHandleFiles = new Map<string, string>();
  private readonly eventLogs = new EventLogs();

  private constructor(root: string) {
    this.layout = stateLayout(root);
    this.locks = new LockDirectory(this.layout.locks);
  }

  static async open(explicitDir?: string): Promise<StateStore> {
    const store = new StateStore(resolveStateDir(explicitDir));
    const { root, handles, turns, locks, tmux, homes, history } = store.layout;
    try {
      refuseNonDirectoryRoot(root);
      await ensurePrivateDir(root);
      await Promise.all([handles, turns, locks, tmux, homes, history].map((dir) => ensurePrivateDir(dir)));
    } catch (err) {
      throw unusableStateDir(err, root);
    }
    return store;
  }

  handleFile(id: string): string {
    return path.join(this.layout.handles, `${id}.json`);
  }

  eventsFile(id: string): string {
    return path.join(this.layout.handles, `${id}.events.jsonl`);
  }

  turnsDir(id: string): string {
    return path.join(this.layout.turns, id);
  }

  async saveHandle(handle: AgentSessionHandle): Promise<void> {
    const checked = AgentSessionHandle.parse({ ...handle, updatedAt: new Date().toISOString() });
    const file = this.handleFile(handle.id);
    await unlessRemoved(this.layout.handles, handle.id, () => writeJsonAtomic(file, checked), () => fs.rm(file, { force: true }));
  }

  /** Loads by id or name; corrupt files are reported and left untouched. */
  async loadHandle(ref: string): Promise<AgentSessionHandle> {
    parseHandleRef(ref);
    if (HandleId.safeParse(ref).success) {
      const byId = await readHandleFile(this.handleFile(ref), ref);
      if (byId) return this.refusePlantedLinks(byId);
    }
    for (const handle of await this.listHandles()) {
      if (handle.name === ref) return this.refusePlantedLinks(handle);
    }
    throw new CalError('not_found', `no handle ${ref} in ${this.layout.root}; list them with: cal inspect`, { handle: ref });
  }

  /**
   * A handle whose event log or turn folder is a symlink, a FIFO or anything but what it should
   * be is refused before anything is sent.
   */
  private async refusePlantedLinks(handle: AgentSessionHandle): Promise<AgentSessionHandle> {
    await refuseSymlink(this.eventsFile(handle.id));
    await refuseSymlink(this.turnsDir(handle.id));
    await refuseNonRegular(this.eventsFile(handle.id));
    await refuseNonDirectory(this.turnsDir(handle.id));
    return handle;
  }

  /** Every readable handle; unreadable ones are skipped (inspect reports them separately). */
  async listHandles(): Promise<AgentSessionHandle[]> {
    const out: AgentSessionHandle[] = [];
    for (const entry of await fs.readdir(this.layout.handles)) {
      const m = /^([a-z0-9]{6,32})\.json$/.exec(entry);
      if (!m?.[1]) continue;
      const file = this.handleFile(m[1]);
      const identity = fileIdentity(file);
      const read = await readHandleAt(file, m[1]);
      if (!read.ok) continue;
      out.push(read.value);
      if (identity !== null) this.parsedHandleFiles.set(file, identity);
    }
    return out.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  /**
   * Whether a name is in use: by a readable handle, by a handle file that no longer parses but
   * still names it (a corrupt handle keeps its name), or as another handle's id (a name equal to
   * an id would make `continue <name>` reach that other handle).
   */
  async isNameTaken(name: string): Promise<boolean> {
    if ((await this.listHandles()).some((h) => h.name === name || h.id === name)) return true;
    for (const { name: unreadableName } of await this.unreadableHandles()) if (unreadableName === name) return true;
    return HandleId.safeParse(name).success && existsSyncSafe(this.handleFile(name));
  }

  /** Handle files that cannot be read as a handle, with the name they still carry (if any). */
  async unreadableHandles(): Promise<Array<{ file: string; reason: string; name: string | null }>> {
    const out: Array<{ file: string; reason: string; name: string | null }> = [];
    for (const entry of await fs.readdir(this.layout.handles)) {
      const m = /^([a-z0-9]{6,32})\.json$/.exec(entry);
      if (!m?.[1]) continue;
      const file = this.handleFile(m[1]);
      const identity = fileIdentity(file);
      if (identity !== null && this.parsedHandleFiles.get(file) === identity) continue;
      const read = await readHandleAt(file, m[1]);
      if (read.ok || read.reason === 'missing') continue;
      const named = await readJsonFile(file, NameProbe);
      out.push({ file, reason: read.detail, name: named.ok ? (named.value.name ?? null) : null });
    }
    return out;
  }

  /**
   * Deletes everything cal keeps of one handle: its file, event log, turn records, its folder
   * under homes/ and an API session's history. The handle file goes first, so a removal cut
   * short leaves no handle that points at half-deleted records.
   */
  /** Marks a handle removed ahead of its deletion: from then on nothing of it is written. */
  async markRemoved(id: string): Promise<void> {
    await markRemoved(this.layout.handles, id);
  }

  async deleteHandle(handle: AgentSessionHandle): Promise<void> {
    // The mark first: a cal still running a turn of this handle writes nothing after it.
    await markRemoved(this.layout.handles, handle.id);
    await fs.rm(this.handleFile(handle.id), { force: true });
    const rest = [this.eventsFile(handle.id), this.turnsDir(handle.id), path.join(this.layout.homes, handle.id)];
    const history = handle.provider.transport === 'api' ? handle.provider.transcript?.path : undefined;
    // Only a history file inside this state directory's history/ folder is cal's to delete.
    if (history && path.dirname(history) === this.layout.history) rest.push(history);
    for (const file of rest) await fs.rm(file, { recursive: true, force: true });
  }

  async appendEvent(event: EventRecord): Promise<void> {
    const file = this.eventsFile(event.handle);
    await unlessRemoved(this.layout.handles, event.handle, () => appendJsonLine(file, event), () => fs.rm(file, { force: true }));
  }

  async readEvents(id: string): Promise<EventRecord[]> {
    return this.eventLogs.all(this.eventsFile(id));
  }

  /** The events recorded since `cursor` (every one without it), and where the next read begins. */
  async readEventsSince(id: string, cursor: LogCursor | null): Promise<{ events: EventRecord[]; cursor: LogCursor | null }> {
    const { events, cursor: next } = eventsSince(this.eventsFile(id), cursor);
    return { events, cursor: next };
  }

  /** Whether the handle's own file is still there (a handle removed meanwhile is not). */
  hasHandleFile(id: string): boolean {
    try {
      lstatSync(this.handleFile(id));
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
  }

  async saveTurn(turn: TurnRecord): Promise<void> {
    const dir = this.turnsDir(turn.handleId);
    await unlessRemoved(this.layout.handles, turn.handleId, () => this.writeTurn(dir, turn), () => fs.rm(dir, { recursive: true, force: true }));
  }

  private async writeTurn(dir: string, turn: TurnRecord): Promise<void> {
    if (!this.turnDirsChecked.has(dir)) {
      // Not recursive: a state directory removed while cal runs is reported, not silently recreated.
      try {
        mkdirSync(dir, { mode: 0o700 });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw stateWriteError(err, dir);
      }
      await ensurePrivateDir(dir);
      // A turn moves through several statuses: its folder is checked once per process.
      this.turnDirsChecked.add(dir);
    }
    const checked = TurnRecord.parse({ ...turn, updatedAt: new Date().toISOString() });
    // A turn still before its send (queued, waiting for the lock) is written without an fsync: if
    // the machine loses it, nothing was sent. Every record from `sending` on is fsynced before
    // cal goes on (the send itself waits for it). One fsync fewer on the way to every paste, and
    // one wait fewer behind other writes on a busy disk.
    await writeJsonAtomic(path.join(dir, `${turn.id}.json`), checked, { durable: !unsentStatuses.has(checked.status) });
  }

  /**
   * Deletes a turn record that never became a turn: a refusal (busy) before anything was sent,
   * which is not part of the session's history (issue 41).
   */
  async deleteTurn(turn: TurnRecord): Promise<void> {
    await fs.rm(path.join(this.turnsDir(turn.handleId), `${turn.id}.json`), { force: true });
  }

  /** How many turn record files a handle has, readable or not. */
  async turnFileCount(handleId: string): Promise<number> {
    const entries = await fs.readdir(this.turnsDir(handleId)).catch(() => [] as string[]);
    return entries.filter((e) => /^t\d+-[a-z0-9]+\.json$/.test(e)).length;
  }

  /** Turn record files that cannot be read (torn, corrupt, not a file), for inspect and recover to report. */
  async unreadableTurns(handleId: string): Promise<Array<{ file: string; reason: string }>> {
    const dir = this.turnsDir(handleId);
    const out: Array<{ file: string; reason: string }> = [];
    for (const entry of await fs.readdir(dir).catch(() => [] as string[])) {
      if (!/^t\d+-[a-z0-9]+\.json$/.test(entry)) continue;
      const read = await readJsonFile(path.join(dir, entry), TurnRecord);
      if (!read.ok && read.reason === 'corrupt') out.push({ file: path.join(dir, entry), reason: read.detail });
    }
    return out;
  }

  /**
   * The last turn (as listTurns orders them) read alone: the seq is in each record's file name
   * (`t<seq>-<id>.json`), so listing every handle's last turn parses one file per handle, not
   * every turn of every handle. Unreadable records are passed over, as listTurns does.
   */
  async lastTurn(handleId: string): Promise<TurnRecord | null> {
    const named = await this.namedTurnFiles(handleId);
    if (!named) return (await this.listTurns(handleId)).at(-1) ?? null;
    for (let i = named.length - 1; i >= 0; i--) {
      const read = await readJsonFile(path.join(this.turnsDir(handleId), (named[i] as { entry: string }).entry), TurnRecord);
      if (read.ok) return read.value;
    }
    return null;
  }

  /**
   * The seq a new turn takes: past every record on disk, readable or not (a torn record still
   * holds its number), read from the file names alone.
   */
  async nextTurnSeq(handleId: string): Promise<number> {
    const named = await this.namedTurnFiles(handleId);
    if (!named) {
      const turns = await this.listTurns(handleId);
      return Math.max(turns.length, ...turns.map((t) => t.seq), await this.turnFileCount(handleId)) + 1;
    }
    return Math.max(named.length, named.at(-1)?.seq ?? 0) + 1;
  }

  /**
   * The turn files of a handle by the seq in their names, in listTurns' order (ties in folder
   * order); null when some .json file is not named like a turn record (then its content decides).
   */
  private async namedTurnFiles(handleId: string): Promise<{ entry: string; seq: number }[] | null> {
    const dir = this.turnsDir(handleId);
    await refuseSymlink(dir);
    let entries: string[];
    try {
      // Synchronously, like the records' own reads (fs.ts): one readdir costs less than a
      // thread-pool round trip, and a continue lists its turns twice before the send.
      entries = readdirSync(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const named: { entry: string; seq: number }[] = [];
    for (const entry of entries) {
      if (!entry.endsWith('.json')) continue;
      const m = /^t(\d+)-[a-z0-9]+\.json$/.exec(entry);
      if (!m?.[1]) return null;
      named.push({ entry, seq: Number(m[1]) });
    }
    return named.sort((a, b) => a.seq - b.seq);
  }

  /** What a continue need not read again of the handle's turn records (state/settled-mark.ts). */
  settledMark(handleId: string): Promise<SettledMark> {
    return readSettledMark(this.turnsDir(handleId));
  }

  saveSettledMark(handleId: string, mark: SettledMark): Promise<void> {
    return saveSettledMark(this.turnsDir(handleId), mark);
  }

  /**
   * Only the turn records whose seq (read from the file name, which is what `wanted` and the
   * returned seq are) `wanted` takes, in that seq's order; `turn` is null for a record that
   * cannot be read. Null when some .json file is not named like a turn record (then its content
   * decides, and only listTurns can tell).
   */
  async turnsWhere(handleId: string, wanted: (seq: number) => boolean): Promise<Array<{ seq: number; turn: TurnRecord | null }> | null> {
    const named = await this.namedTurnFiles(handleId);
    if (!named) return null;
    const out: Array<{ seq: number; turn: TurnRecord | null }> = [];
    for (const { entry, seq } of named) {
      if (!wanted(seq)) continue;
      const read = await readJsonFile(path.join(this.turnsDir(handleId), entry), TurnRecord);
      out.push({ seq, turn: read.ok ? read.value : null });
    }
    return out;
  }

  async listTurns(handleId: string): Promise<TurnRecord[]> {
    const dir = this.turnsDir(handleId);
    await refuseSymlink(dir);
    let entries: string[];
    try {
      // Synchronously, as namedTurnFiles lists them.
      entries = readdirSync(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const out: TurnRecord[] = [];
    for (const entry of entries) {
      if (!entry.endsWith('.json')) continue;
      const read = await readJsonFile(path.join(dir, entry), TurnRecord);
      if (read.ok) out.push(read.value);
    }
    return out.sort((a, b) => a.seq - b.seq);
  }
}
