import { randomBytes } from '../util/random.js';
import { closeSync, fchmodSync, constants as fsConstants, fstatSync, fsyncSync, lstatSync, openSync, readFileSync, readSync, renameSync, unlinkSync, writeFileSync, writeSync, type Stats } from 'node:fs';
import path from 'node:path';
import type { z } from '../util/zod.js';
import { CalError, writeRefusal } from '../errors.js';
import { feedJsonLines } from '../util/json-lines.js';

export { ensurePrivateDir } from '../util/private-dir.js';

/** Writes to one file in this process, in call order (a later write never lands under an earlier one). */
const pendingWrites = new Map<string, Promise<void>>();

export interface WriteOptions {
  /**
   * false: no fsync, for a document whose loss in a crash of the machine says nothing false (a
   * turn not yet sent, a cache). The rename stays atomic: a process that reads it sees the old
   * document or the new one; only after a power loss may the new one be missing or empty.
   */
  durable?: boolean;
}

/**
 * Atomic write: a fresh temp file beside it (O_EXCL, never through a symlink), fsync, rename;
 * mode 0600. What is on disk is the old document or the new one, whole.
 */
export async function writeJsonAtomic(file: string, value: unknown, opts: WriteOptions = {}): Promise<void> {
  const previous = pendingWrites.get(file) ?? Promise.resolve();
  const write = previous.catch(() => undefined).then(() => writeNow(file, JSON.stringify(value, null, 2) + '\n', opts.durable !== false));
  pendingWrites.set(file, write);
  try {
    await write;
  } finally {
    if (pendingWrites.get(file) === write) pendingWrites.delete(file);
  }
}

/**
 * The write itself, synchronously: six small system calls cost less than six thread-pool round
 * trips, and a command has nothing else to do meanwhile.
 */
async function writeNow(file: string, text: string, durable: boolean): Promise<void> {
  await refuseSymlink(file);
  await refuseNonRegular(file);
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    const fd = openSync(tmp, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o600);
    try {
      // 0600 whatever the umask (which could take the owner's own bits away as well).
      fchmodSync(fd, 0o600);
      writeFileSync(fd, text, 'utf8');
      if (durable) fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // never created, or already renamed
    }
    throw stateWriteError(err, file);
  }
}

/** Appends one line to a JSONL log (0600), never through a symlink. */
export async function appendJsonLine(file: string, value: unknown): Promise<void> {
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO in place of the log fails at once (ENXIO) instead of waiting for a reader.
    fd = openSync(file, fsConstants.O_WRONLY | fsConstants.O_APPEND | fsConstants.O_CREAT | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK, 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw symlinkError(file);
    if (code === 'ENXIO') throw notRegularError(file, 'a FIFO');
    if (code === 'EISDIR') throw notRegularError(file, 'a directory');
    throw stateWriteError(err, file);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw notRegularError(file, st.isFIFO() ? 'a FIFO' : 'not a regular file');
    try {
      writeSync(fd, JSON.stringify(value) + '\n');
    } catch (err) {
      throw stateWriteError(err, file);
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * The state directory itself failing (disk full, read-only, removed while cal runs) is a problem
 * of the environment, reported like the other state-directory problems (usage), not as a bug.
 * Writes are atomic, so what is on disk stays whole; a turn left open is settled by cal recover.
 */
export function stateWriteError(err: unknown, file: string): unknown {
  return writeRefusal(err, file, { EIO: 'an I/O error', ENOENT: 'its folder is gone (was the state directory removed while cal ran?)' }) ?? err;
}

function symlinkError(file: string): CalError {
  return new CalError('invalid_handle', `${path.basename(file)} in the state directory is a symlink: refusing to follow it`);
}

/**
 * Throws invalid_handle when `file` (a file or a folder) is a symlink; a missing one is fine.
 * The checks here look synchronously: one lstat costs less than a thread-pool round trip.
 */
export async function refuseSymlink(file: string): Promise<void> {
  try {
    const st = lstatSync(file);
    if (st.isSymbolicLink()) throw symlinkError(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/** Why a state file was not read: not there, a symlink, or something else than a regular file. */
type NotRead = { missing: true } | { symlink: true } | { notRegular: string };

/**
 * Reads a small state file synchronously with `read`: a command reads up to hundreds of them
 * (inspect of every handle), and a thread-pool round trip per open, stat, read and close costs
 * more than the reads. Never through a symlink, never blocking: a FIFO planted in place of a
 * record would otherwise hang cal in open() until some writer appears (O_NONBLOCK, then fstat),
 * and anything but a regular file is refused.
 */
function readStateFile<T>(file: string, read: (fd: number, st: Stats) => T): { value: T } | NotRead {
  let fd: number;
  try {
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { missing: true };
    if (code === 'ELOOP') return { symlink: true };
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { notRegular: st.isDirectory() ? 'a directory' : st.isFIFO() ? 'a FIFO' : 'not a regular file' };
    return { value: read(fd, st) };
  } finally {
    closeSync(fd);
  }
}

function notRegularError(file: string, what: string): CalError {
  return new CalError('invalid_handle', `${path.basename(file)} in the state directory is ${what}, not a regular file: refusing to use it`);
}

/** A FIFO, socket or directory where a record belongs is refused, not replaced behind its back. */
export async function refuseNonRegular(file: string): Promise<void> {
  try {
    const st = lstatSync(file);
    if (!st.isFile()) throw notRegularError(file, st.isDirectory() ? 'a directory' : st.isFIFO() ? 'a FIFO' : 'not a regular file');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/** A folder of the state directory that is something else (a FIFO, a file) is refused. */
export async function refuseNonDirectory(dir: string): Promise<void> {
  try {
    const st = lstatSync(dir);
    if (!st.isDirectory()) throw notRegularError(dir, st.isFIFO() ? 'a FIFO' : 'not a folder');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

export type ReadResult<T> = { ok: true; value: T } | { ok: false; reason: 'missing' } | { ok: false; reason: 'corrupt'; detail: string };

/** Reads a JSON file through its schema. Never follows a symlink; never modifies the file. */
export async function readJsonFile<S extends z.ZodType>(file: string, schema: S): Promise<ReadResult<z.infer<S>>> {
  const read = readStateFile(file, (fd) => readFileSync(fd, 'utf8'));
  if ('missing' in read) return { ok: false, reason: 'missing' };
  if ('symlink' in read) return { ok: false, reason: 'corrupt', detail: 'it is a symlink' };
  if ('notRegular' in read) return { ok: false, reason: 'corrupt', detail: `it is ${read.notRegular}` };
  let raw: unknown;
  try {
    raw = JSON.parse(read.value);
  } catch (err) {
    return { ok: false, reason: 'corrupt', detail: `not valid JSON (${(err as Error).message})` };
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, reason: 'corrupt', detail: `${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}` };
  }
  return { ok: true, value: parsed.data };
}

/** Where a reader of an append-only JSONL log stopped: which file the log was, and the byte after the last whole line read. */
export interface LogCursor {
  dev: number;
  ino: number;
  offset: number;
}

/**
 * The whole lines a JSONL log gained since `cursor` (all of it without one), parsed, where this
 * read began (`from`: 0 when it read the log from its start) and where the next one begins: past the last newline, so a line still being written is read once it is
 * whole, and a follower reads only what was appended, never the whole log again. A log that is
 * another file now, or shorter than the cursor, is read from its start; a missing one is no lines
 * (cursor null). Never through a symlink, never blocking, nothing but a regular file (as
 * readStateFile). A line that is not JSON (torn by a crash) is skipped, never fatal.
 */
export function readJsonLinesSince(file: string, cursor: LogCursor | null): { values: unknown[]; cursor: LogCursor | null; from: number } {
  const read = readStateFile(file, (fd, st) => {
    const start = cursor && cursor.dev === st.dev && cursor.ino === st.ino && cursor.offset <= st.size ? cursor.offset : 0;
    const buf = Buffer.alloc(st.size - start);
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, start + got);
      if (n <= 0) break;
      got += n;
    }
    const whole = buf.subarray(0, got).lastIndexOf(0x0a) + 1;
    const values: unknown[] = [];
    // A newline is never inside a UTF-8 sequence: the whole lines decode alone.
    feedJsonLines(buf.toString('utf8', 0, whole), (value) => value !== undefined && values.push(value));
    return { values, cursor: { dev: st.dev, ino: st.ino, offset: start + whole }, from: start };
  });
  if ('missing' in read) return { values: [], cursor: null, from: 0 };
  if ('symlink' in read) throw symlinkError(file);
  if ('notRegular' in read) throw notRegularError(file, read.notRegular);
  return read.value;
}
