import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import type { z } from 'zod';
import { CalError } from '../errors.js';

export { ensurePrivateDir } from '../util/private-dir.js';

/** Atomic write: temp file, fsync, rename; mode 0600. */
export async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  await refuseSymlink(file);
  await writeFileAtomic(file, JSON.stringify(value, null, 2) + '\n', { mode: 0o600, fsync: true }).catch((err: unknown) => {
    throw stateWriteError(err, file);
  });
}

/** Appends one line to a JSONL log (0600), never through a symlink. */
export async function appendJsonLine(file: string, value: unknown): Promise<void> {
  const handle = await fs
    .open(file, fsConstants.O_WRONLY | fsConstants.O_APPEND | fsConstants.O_CREAT | fsConstants.O_NOFOLLOW, 0o600)
    .catch((err: NodeJS.ErrnoException) => {
      throw err.code === 'ELOOP' ? symlinkError(file) : stateWriteError(err, file);
    });
  try {
    await handle.write(JSON.stringify(value) + '\n').catch((err: unknown) => {
      throw stateWriteError(err, file);
    });
  } finally {
    await handle.close();
  }
}

/**
 * The state directory itself failing (disk full, read-only, removed while cal runs) is a problem
 * of the environment, reported like the other state-directory problems (usage), not as a bug.
 * Writes are atomic, so what is on disk stays whole; a turn left open is settled by cal recover.
 */
export function stateWriteError(err: unknown, file: string): unknown {
  const why: Record<string, string> = {
    ENOSPC: 'no space left on the device',
    EDQUOT: 'disk quota exceeded',
    EROFS: 'the file system is read-only',
    EIO: 'an I/O error',
    ENOENT: 'its folder is gone (was the state directory removed while cal ran?)',
  };
  const reason = why[(err as NodeJS.ErrnoException).code ?? ''];
  if (!reason) return err;
  return new CalError('usage', `cannot write ${file}: ${reason}; fix that, then run cal recover to settle unfinished turns`);
}

function symlinkError(file: string): CalError {
  return new CalError('invalid_handle', `${path.basename(file)} in the state directory is a symlink: refusing to follow it`);
}

/** Throws invalid_handle when `file` (a file or a folder) is a symlink; a missing one is fine. */
export async function refuseSymlink(file: string): Promise<void> {
  try {
    const st = await fs.lstat(file);
    if (st.isSymbolicLink()) throw symlinkError(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

export type ReadResult<T> = { ok: true; value: T } | { ok: false; reason: 'missing' } | { ok: false; reason: 'corrupt'; detail: string };

/** Reads a JSON file through its schema. Never follows a symlink; never modifies the file. */
export async function readJsonFile<S extends z.ZodType>(file: string, schema: S): Promise<ReadResult<z.infer<S>>> {
  let text: string;
  try {
    const handle = await fs.open(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
    try {
      text = await handle.readFile('utf8');
    } finally {
      await handle.close();
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { ok: false, reason: 'missing' };
    if (code === 'ELOOP') return { ok: false, reason: 'corrupt', detail: 'it is a symlink' };
    throw err;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
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

export async function readJsonLines(file: string): Promise<unknown[]> {
  let text: string;
  try {
    const handle = await fs.open(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
    try {
      text = await handle.readFile('utf8');
    } finally {
      await handle.close();
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') throw symlinkError(file);
    throw err;
  }
  const out: unknown[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      // A torn last line from a crash is skipped, never fatal.
    }
  }
  return out;
}
