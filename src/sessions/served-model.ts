/**
 * The record `cal model serve` keeps in the state directory while it runs (`model-serve.json`),
 * so `cal model env` finds the server without its URL, and the check of every model URL cal
 * prints for a shell to run. The record is read and written as every state file is: never
 * through a symlink, never blocking on a FIFO, whole or not at all (src/state/fs.ts).
 */
import { constants as fsConstants, closeSync, fchmodSync, fsyncSync, linkSync, openSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CalError } from '../errors.js';
import { randomBytes } from '../util/random.js';
import { ensurePrivateDir, readJsonFile, refuseNonRegular, refuseSymlink } from '../state/fs.js';
import { refuseNonDirectoryRoot, unusableStateDir } from '../state/paths.js';
import { z } from '../util/zod.js';

/** The file `cal model serve` writes under the state dir while it runs. */
export function servedModelFile(stateDir: string): string {
  return path.join(stateDir, 'model-serve.json');
}

/**
 * A model URL cal prints into `export` lines (`eval "$(cal model env)"`) and into the CLIs'
 * config files: `http(s)://host[:port][/path]` in plain URL characters, nothing a shell, TOML
 * or JSON would read as more than a URL (no blank, control character, quote, `$` or backtick),
 * no credentials, query or fragment. Returns it without trailing slashes.
 */
export function checkModelUrl(url: string, source: string): string {
  const refuse = (why: string): never => {
    throw new CalError('usage', `${source} must be a plain http URL such as http://127.0.0.1:8080 (${why}), not ${JSON.stringify(url)}`);
  };
  if (/[\u0000-\u0020\u007f-\u009f\u2028\u2029]/.test(url)) refuse('it holds a blank or a control character');
  if (!/^https?:\/\/[A-Za-z0-9.\-[\]:]+(?:\/[A-Za-z0-9._~%/-]*)?$/.test(url)) refuse('only letters, digits and . - _ ~ % / : [ ] are allowed');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return refuse('it does not parse');
  }
  if (parsed.username !== '' || parsed.password !== '' || parsed.hostname === '') refuse('a host, and no credentials');
  return url.replace(/\/+$/, '');
}

const ServedModel = z.object({ url: z.string(), pid: z.number().int().positive() }).strict();
export type ServedModel = z.infer<typeof ServedModel>;

/** The state directory as every command opens it: no file in its place, private, no link. */
export async function openStateRoot(stateDir: string): Promise<void> {
  try {
    refuseNonDirectoryRoot(stateDir);
    await ensurePrivateDir(stateDir);
  } catch (err) {
    throw unusableStateDir(err, stateDir);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/**
 * The `cal model serve` recorded in this state dir, or null when none runs (no record, or its
 * process is gone). A record that is not whole JSON of the right shape, a symlink or a FIFO is a
 * usage error naming the file, never taken for a URL.
 */
export async function readServedModel(stateDir: string): Promise<ServedModel | null> {
  const file = servedModelFile(stateDir);
  const read = await readJsonFile(file, ServedModel);
  if (!read.ok && read.reason === 'missing') return null;
  if (!read.ok) throw new CalError('usage', `${file} is unreadable (${read.detail}): stop the \`cal model serve\` that wrote it, or remove the file`);
  if (!alive(read.value.pid)) return null;
  checkModelUrl(read.value.url, `the url in ${file}`);
  return read.value;
}

/** Creates `file` with `text` only when no file of that name exists (a temp file, then link(2)). */
function createExclusive(file: string, text: string): boolean {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fd = openSync(tmp, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o600);
  try {
    fchmodSync(fd, 0o600);
    writeFileSync(fd, text, 'utf8');
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  finally {
    unlinkSync(tmp);
  }
}

/**
 * Records this process's server in the state dir, unless another live `cal model serve` is
 * recorded there: then nothing is written and the result says which one (the first server keeps
 * its record; `cal model env` keeps pointing at it). A record left by a server that is gone is
 * replaced. `forget` removes the record only while it is still this process's.
 */
export async function recordServedModel(stateDir: string, url: string): Promise<{ recorded: true; forget: () => Promise<void> } | { recorded: false; other: ServedModel }> {
  await openStateRoot(stateDir);
  const file = servedModelFile(stateDir);
  const text = `${JSON.stringify({ url, pid: process.pid })}\n`;
  for (let attempt = 0; attempt < 3; attempt++) {
    await refuseSymlink(file);
    await refuseNonRegular(file);
    if (createExclusive(file, text)) {
      return {
        recorded: true,
        forget: async () => {
          const now = await readJsonFile(file, ServedModel);
          if (now.ok && now.value.pid === process.pid) unlinkSync(file);
        },
      };
    }
    const other = await readServedModel(stateDir);
    if (other) return { recorded: false, other };
    // The recorded server is gone: its stale record goes (only if it is still that one).
    const stale = await readJsonFile(file, ServedModel);
    if (stale.ok && !alive(stale.value.pid)) unlinkSync(file);
  }
  throw new CalError('busy', `${file} keeps changing: another \`cal model serve\` is starting with this state dir`);
}
