import { lstatSync, type Stats } from 'node:fs';
import { promises as fs } from 'node:fs';
import { CalError } from '../errors.js';

/**
 * Creates (0700) or checks a directory that holds cal's private state.
 * A directory another user can write, or one reached through a symlink, is refused:
 * whoever can write it could plant handles or symlinks that redirect cal's writes.
 */
export async function ensurePrivateDir(dir: string): Promise<void> {
  // The folder is there on every call but the first: look (synchronously, cheaper than a
  // thread-pool round trip) before creating.
  let st = lstatOrNull(dir);
  if (!st) {
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    st = lstatSync(dir);
  }
  if (st.isSymbolicLink() || !st.isDirectory()) {
    throw new CalError('usage', `state path ${dir} is not a plain directory (a symlink?): refusing to use it`);
  }
  if ((st.mode & 0o022) !== 0) {
    throw new CalError('usage', `state directory ${dir} is writable by other users: run chmod 700 ${dir}`);
  }
  if (!ownedPrivately(st)) {
    throw new CalError('usage', `state directory ${dir} belongs to another user: refusing to use it`);
  }
}

/** Whether a file or folder is this user's and nobody else can write it. */
export function ownedPrivately(st: { uid: number; mode: number }): boolean {
  return (st.mode & 0o022) === 0 && (typeof process.getuid !== 'function' || st.uid === process.getuid());
}

/** The rule of ensurePrivateDir as a question, creating nothing: an existing plain directory, no link, this user's alone. */
export function isPrivateDir(dir: string): boolean {
  const st = lstatSync(dir, { throwIfNoEntry: false });
  return st !== undefined && st.isDirectory() && !st.isSymbolicLink() && ownedPrivately(st);
}

function lstatOrNull(dir: string): Stats | null {
  try {
    return lstatSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}
