import { CalError } from '../errors.js';
import { closeSync, constants as fsConstants, fstatSync, openSync, readSync, statSync, watch, type FSWatcher } from 'node:fs';
import path from 'node:path';

/**
 * Incremental JSONL reading from a stored byte offset. Knows nothing about which CLI wrote it.
 * A partial last line (the writer is mid-append) is left for the next read: the returned offset
 * only ever moves past complete lines, so a stored offset is always a line boundary.
 */
export interface JsonlRecord {
  value: unknown;
  /** Byte offset just past this record's newline. */
  endOffset: number;
}

export interface TailResult {
  records: JsonlRecord[];
  offset: number;
  /** Lines that were not JSON (torn writes, invalid UTF-8 noise, oversized lines). */
  skipped: number;
  /** The file is shorter than the stored offset: it was replaced or truncated. */
  truncated: boolean;
  missing: boolean;
}

const CHUNK = 1 << 20;

/**
 * How far each file was read by the last readJsonlFrom (a partial last line included), so that
 * waitForChange returns at once for bytes written between that read and the wait: a record the
 * CLI appended meanwhile sends no notification the wait could still see.
 */
const examined = new Map<string, number>();
/** Lines longer than this are skipped whole rather than held in memory. */
export const MAX_LINE_BYTES = 16 << 20;

/**
 * The reads are synchronous: a turn's end is read as soon as the CLI writes it, and an open, a
 * stat, a read and a close through the thread pool are four round trips on the way from that
 * record to cal's exit (each read between lines is at most CHUNK, about 1 ms for a full one).
 */
export async function readJsonlFrom(file: string, offset: number, maxBytes = 8 << 20, opts: { noFollow?: boolean } = {}): Promise<TailResult> {
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO where the transcript belongs must not hang cal in open() (below, anything
    // but a regular file is read as no transcript yet). `noFollow` for files in cal's own state
    // (a CLI's own transcript may live behind a user's link; cal's files never do).
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | (opts.noFollow ? fsConstants.O_NOFOLLOW : 0));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return noTranscript(file, offset);
    if (opts.noFollow && (err as NodeJS.ErrnoException).code === 'ELOOP') throw new CalError('usage', `${file} in cal's state is a symlink: refusing to read through it (remove it)`);
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return noTranscript(file, offset);
    const { size } = st;
    if (size < offset) {
      examined.delete(file);
      return { records: [], offset, skipped: 0, truncated: true, missing: false };
    }
    const records: JsonlRecord[] = [];
    let skipped = 0;
    let pos = offset;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let lineStart = offset;
    let oversized = false;
    let consumed = 0;
    // The budget ends a read only between lines: stopping inside a line longer than the budget
    // would return the same offset forever, and the tail would never move past that line.
    while (pos < size && (consumed < maxBytes || pendingBytes > 0 || oversized)) {
      const len = Math.min(CHUNK, size - pos);
      const buf = Buffer.allocUnsafe(len);
      const bytesRead = readSync(fd, buf, 0, len, pos);
      if (bytesRead === 0) break;
      let start = 0;
      for (;;) {
        const nl = buf.indexOf(10, start);
        if (nl === -1 || nl >= bytesRead) break;
        const endOffset = pos + nl + 1;
        if (oversized) {
          skipped++;
        } else {
          const piece = buf.subarray(start, nl);
          const line = pendingBytes ? Buffer.concat([...pending, piece]) : piece;
          const parsed = parseLine(line);
          if (parsed === undefined) {
            if (line.length > 0 && line.toString('utf8').trim()) skipped++;
          } else {
            records.push({ value: parsed, endOffset });
          }
        }
        pending = [];
        pendingBytes = 0;
        oversized = false;
        lineStart = endOffset;
        start = nl + 1;
      }
      if (start < bytesRead && !oversized) {
        pending.push(Buffer.from(buf.subarray(start, bytesRead)));
        pendingBytes += bytesRead - start;
        if (pendingBytes > MAX_LINE_BYTES) {
          oversized = true;
          pending = [];
          pendingBytes = 0;
        }
      }
      pos += bytesRead;
      consumed += bytesRead;
    }
    examined.set(file, pos);
    return { records, offset: lineStart, skipped, truncated: false, missing: false };
  } finally {
    closeSync(fd);
  }
}

/** No file there, or something else than a file (a FIFO, a folder): no transcript yet. */
function noTranscript(file: string, offset: number): TailResult {
  examined.delete(file);
  return { records: [], offset, skipped: 0, truncated: false, missing: true };
}

function parseLine(line: Buffer): unknown {
  if (line.length === 0) return undefined;
  try {
    return JSON.parse(line.toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * Resolves when `file` may have changed: at once when it differs in size from what the last
 * readJsonlFrom of it examined (written meanwhile, or a read that stopped at its budget), else
 * when a file-change notification on its folder arrives, with a polling fallback (inotify can
 * miss events, and the folder may not exist yet).
 */
export function waitForChange(file: string, timeoutMs: number, pollMs = 200): Promise<void> {
  return new Promise((resolve) => {
    let watcher: FSWatcher | null = null;
    let settled = false;
    const base = path.basename(file);
    const done = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearInterval(poll);
      watcher?.close();
      resolve();
    };
    const timer = setTimeout(done, timeoutMs);
    let lastSize = examined.get(file) ?? -1;
    const check = () => {
      let size: number;
      try {
        size = statSync(file).size;
      } catch {
        return;
      }
      if (lastSize !== -1 && size !== lastSize) done();
      lastSize = size;
    };
    const poll = setInterval(check, pollMs);
    try {
      watcher = watch(path.dirname(file), (_event, name) => {
        if (!name || name === base) done();
      });
      watcher.on('error', () => undefined);
    } catch {
      // Folder not there yet: polling covers it.
    }
    // After the watch is set up, so that a write is either seen here or notified.
    check();
  });
}

/** Byte offset just past the last complete line of a file (0 when it is missing or has none). */
export async function lastLineBoundary(file: string): Promise<number> {
  let fd: number;
  try {
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  } catch {
    return 0;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return 0;
    let end = st.size;
    while (end > 0) {
      const len = Math.min(CHUNK, end);
      const buf = Buffer.allocUnsafe(len);
      readSync(fd, buf, 0, len, end - len);
      const nl = buf.lastIndexOf(10);
      if (nl !== -1) return end - len + nl + 1;
      end -= len;
    }
    return 0;
  } finally {
    closeSync(fd);
  }
}
