import { digestHex } from '../util/digest.js';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CalError } from '../errors.js';
import { ensurePrivateDir, isPrivateDir } from '../util/private-dir.js';

/** Unix socket paths are limited to 107 bytes; a deep state directory gets a short alias. */
const MAX_SOCKET_PATH = 100;

/** The tmux socket of cal's own for one state directory, in a 0700 folder. */
export async function tmuxSocketFor(transportDir: string, tmpRoot?: string): Promise<string> {
  const direct = path.join(transportDir, 'tmux.sock');
  if (Buffer.byteLength(direct) <= MAX_SOCKET_PATH) {
    await ensurePrivateDir(transportDir);
    return refuseNonSocket(direct);
  }
  const base = socketBase(transportDir, tmpRoot);
  const digest = digestHex('sha256', transportDir).slice(0, 16);
  return refuseNonSocket(path.join(base, `${digest}.sock`));
}

/** Where a state directory whose own path is too long for a socket last put its socket, when not in /tmp/cal-<uid>. */
const FALLBACK_RECORD = 'socket-dir';

/**
 * The short folder for the socket: `/tmp/cal-<uid>`, shared by every state directory of this
 * user. Another user can create that name first (squatting it, so cal would refuse it); then,
 * and from then on for this state directory, a folder of a name nobody can guess made with
 * mkdtemp (created atomically, 0700, this user's) and recorded in the state's own tmux folder, so
 * every cal of this state directory finds the same server. Checked before a handle is created.
 */
function socketBase(transportDir: string, tmpRoot?: string): string {
  const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
  // Not $TMPDIR: a cal started with another TMPDIR must find the same server, or it would take
  // a live pane for lost and resume the session into a second server (two CLIs on one session).
  const tmp = tmpRoot ?? (existsSync('/tmp') ? '/tmp' : os.tmpdir());
  const record = path.join(transportDir, FALLBACK_RECORD);
  const recorded = readRecord(record, path.join(tmp, `cal-${uid}-`));
  if (recorded) return recorded;
  const shared = path.join(tmp, `cal-${uid}`);
  try {
    mkdirSync(shared, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  if (isPrivateDir(shared)) return shared;
  mkdirSync(transportDir, { recursive: true, mode: 0o700 });
  if (!isPrivateDir(transportDir)) throw new CalError('usage', `state path ${transportDir} is not a plain directory of this user's alone: refusing to use it`);
  const own = mkdtempSync(path.join(tmp, `cal-${uid}-`));
  const temp = `${record}.${process.pid}.tmp`;
  writeFileSync(temp, own, { mode: 0o600, flag: 'wx' });
  renameSync(temp, record);
  return own;
}

/** The recorded fallback folder, when it is one cal made (its prefix) and still this user's alone. */
function readRecord(record: string, prefix: string): string | null {
  const st = lstatSync(record, { throwIfNoEntry: false });
  if (!st) return null;
  if (!st.isFile() || st.size > 4096) throw new CalError('usage', `${record} is not a regular file: refusing to use it`);
  const dir = readFileSync(record, 'utf8').trim();
  if (!dir.startsWith(prefix) || dir.slice(prefix.length).includes('/') || !isPrivateDir(dir)) return null;
  return dir;
}

/** Something other than a socket at the socket path (a planted symlink to another server) is refused. */
function refuseNonSocket(socket: string): string {
  let st;
  try {
    st = lstatSync(socket);
  } catch {
    return socket;
  }
  if (!st.isSocket()) throw new CalError('usage', `${socket} is not a socket (a symlink?): refusing to use it`);
  return socket;
}
