import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CalError } from '../errors.js';
import { ownedPrivately } from './private-dir.js';
import { randomBytes } from './random.js';

/**
 * Files cal writes in its own folders (homes/<id>/ and below): never through a link planted in
 * their place, before or after a check. Folders are made, then looked at with lstat; a file is
 * written to a new name with O_EXCL (which no link survives) and renamed over the old one (a
 * rename replaces a link itself, never its target).
 */
function refuse(file: string, what: string): CalError {
  return new CalError('usage', `${file} in cal's state is ${what}: refusing to write or read through it (remove it, or run cal remove on its handle)`);
}

/** Makes `dir` (and its missing parents) and checks each level from `below` down is a plain folder of this user's alone. */
export function ensurePlainDirSync(dir: string, below: string): void {
  const rel = path.relative(below, dir);
  if (rel.startsWith('..') || path.isAbsolute(rel)) throw new CalError('internal', `${dir} is not inside ${below}`);
  let at = below;
  for (const part of rel.split(path.sep).filter(Boolean)) {
    at = path.join(at, part);
    try {
      mkdirSync(at, { mode: 0o700 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const st = lstatSync(at);
    if (st.isSymbolicLink()) throw refuse(at, 'a symlink');
    if (!st.isDirectory()) throw refuse(at, 'not a folder');
    if (!ownedPrivately(st)) throw refuse(at, "another user's, or writable by others");
  }
}

/** What is at `file` now: nothing, or a regular file (else refused). */
function checkRegularOrMissing(file: string): void {
  const st = lstatSync(file, { throwIfNoEntry: false });
  if (!st) return;
  if (st.isSymbolicLink()) throw refuse(file, 'a symlink');
  if (!st.isFile()) throw refuse(file, 'not a regular file');
}

/** Replaces `file` with `content` (0600) without following a link at its place. */
export function writePlainFileSync(file: string, content: string): void {
  checkRegularOrMissing(file);
  const temp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    writeFileSync(temp, content, { mode: 0o600, flag: 'wx' });
    renameSync(temp, file);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
}

/** Creates `file` empty (0600) if missing, never through a link; an existing one must be a regular file of this user's. */
export function touchPlainFileSync(file: string): void {
  let fd: number;
  try {
    fd = openSync(file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw refuse(file, 'a symlink');
    if (code === 'EISDIR' || code === 'ENXIO') throw refuse(file, 'not a regular file');
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw refuse(file, 'not a regular file');
    if (!ownedPrivately(st)) throw refuse(file, "another user's, or writable by others");
  } finally {
    closeSync(fd);
  }
}
