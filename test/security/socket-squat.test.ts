import { chmodSync, chownSync, lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tmuxSocketFor } from '../../src/engine/tmux-socket.js';
import { scratchDir } from '../support/cal.js';
import { removeScratch } from '../support/scratch.js';

/**
 * Issue 40, item 10: a state directory too deep for a socket path puts its tmux socket in
 * `<tmp>/cal-<uid>`. Another user creating that folder first (or a link, or a folder others can
 * write) must not stop cal: it falls back to a folder nobody can guess, made by mkdtemp, recorded
 * in the state, and found again by the next cal. (A scratch folder stands for /tmp here: the
 * machine's own /tmp/cal-<uid> is shared by every test.)
 */
describe('a squatted /tmp/cal-<uid> is never used, and cal falls back to a private folder', () => {
  let root: string;
  let tmp: string;
  let transport: string;
  const uid = process.getuid?.() ?? 0;

  beforeEach(async () => {
    root = await scratchDir('sec-squat');
    tmp = path.join(root, 'tmp');
    mkdirSync(tmp);
    transport = path.join(root, 'state', 'x'.repeat(120), 'tmux');
    mkdirSync(transport, { recursive: true, mode: 0o700 });
  });
  afterEach(async () => removeScratch(root));

  const squats: Array<[string, (dir: string) => void]> = [
    ['writable by others', (dir) => { mkdirSync(dir); chmodSync(dir, 0o777); }],
    ['a symlink to a folder of ours', (dir) => { mkdirSync(`${dir}-target`, { mode: 0o700 }); symlinkSync(`${dir}-target`, dir); }],
    ['a plain file', (dir) => { mkdirSync(path.dirname(dir), { recursive: true }); writeFileSync(dir, ''); }],
    ...(uid === 0 ? ([['owned by another user', (dir: string) => { mkdirSync(dir, { mode: 0o700 }); chownSync(dir, 65534, 65534); }]] as Array<[string, (dir: string) => void]>) : []),
  ];

  it.each(squats)('squatted (%s): a private folder of an unguessable name, the same on the next call', async (_label, squat) => {
    squat(path.join(tmp, `cal-${uid}`));
    const socket = await tmuxSocketFor(transport, tmp);
    const dir = path.dirname(socket);
    expect(dir).not.toBe(path.join(tmp, `cal-${uid}`));
    expect(path.basename(dir)).toMatch(new RegExp(`^cal-${uid}-[A-Za-z0-9]{6}$`));
    const st = lstatSync(dir);
    expect(st.isDirectory()).toBe(true);
    expect(st.mode & 0o077).toBe(0);
    expect(st.uid).toBe(uid);
    expect(readFileSync(path.join(transport, 'socket-dir'), 'utf8')).toBe(dir);
    expect(await tmuxSocketFor(transport, tmp)).toBe(socket);
    expect(Buffer.byteLength(socket)).toBeLessThan(108);
  });

  it('unsquatted: the shared folder, as before', async () => {
    const socket = await tmuxSocketFor(transport, tmp);
    expect(path.dirname(socket)).toBe(path.join(tmp, `cal-${uid}`));
  });
});
