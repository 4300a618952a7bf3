import { digestHex } from '../util/digest.js';
import { existsSync, lstatSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CalError } from '../errors.js';
import { ensurePrivateDir } from '../util/private-dir.js';

/** Unix socket paths are limited to 107 bytes; a deep state directory gets a short alias. */
const MAX_SOCKET_PATH = 100;

/** The tmux socket of cal's own for one state directory, in a 0700 folder. */
export async function tmuxSocketFor(transportDir: string): Promise<string> {
  const direct = path.join(transportDir, 'tmux.sock');
  if (Buffer.byteLength(direct) <= MAX_SOCKET_PATH) {
    await ensurePrivateDir(transportDir);
    return refuseNonSocket(direct);
  }
  const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
  // Not $TMPDIR: a cal started with another TMPDIR must find the same server, or it would take
  // a live pane for lost and resume the session into a second server (two CLIs on one session).
  const base = path.join(existsSync('/tmp') ? '/tmp' : os.tmpdir(), `cal-${uid}`);
  mkdirSync(base, { recursive: true, mode: 0o700 });
  await ensurePrivateDir(base);
  const digest = digestHex('sha256', transportDir).slice(0, 16);
  return refuseNonSocket(path.join(base, `${digest}.sock`));
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
