import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tmuxSocketFor } from '../../src/engine/tmux-socket.js';
import { TmuxServer } from '../../src/tmux/tmux.js';
import { scratchDir } from '../support/cal.js';
import { removeScratch } from '../support/scratch.js';
import { processExists } from '../support/structured-fakes.js';

/**
 * TmuxServer.pasteIfOwn, on a real tmux: the check that the pane is still the handle's own and
 * alive is made by the tmux server in the same call as the paste. Each case must paste exactly
 * when that holds, and leave no buffer (the message) behind in the server when it does not.
 */
async function lines(file: string, want: number): Promise<string[]> {
  for (let i = 0; i < 100; i++) {
    const text = existsSync(file) ? await fs.readFile(file, 'utf8') : '';
    const got = text.split('\n').filter(Boolean);
    if (got.length >= want) return got;
    await new Promise((r) => setTimeout(r, 50));
  }
  return existsSync(file) ? (await fs.readFile(file, 'utf8')).split('\n').filter(Boolean) : [];
}

describe('pasteIfOwn pastes only into the pane the handle records, alive', () => {
  let root: string;
  let tmux: TmuxServer;

  beforeAll(async () => {
    root = await scratchDir('tmux-paste-if-own');
    tmux = new TmuxServer(await tmuxSocketFor(path.join(root, 'tmux')));
  });

  afterAll(async () => {
    await tmux.killServer();
    await removeScratch(root);
  });

  /** A pane whose process appends every line it reads to `file`. */
  async function reader(session: string, file: string) {
    return tmux.newPane({
      session,
      cwd: root,
      argv: [process.execPath, '-e', `process.stdin.on('data', (d) => require('fs').appendFileSync(${JSON.stringify(file)}, d.toString().replace(/\\x1b\\[20[01]~/g, '')))`],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root },
    });
  }

  async function buffers(): Promise<string> {
    const { execFileSync } = await import('node:child_process');
    return execFileSync('tmux', ['-S', tmux.socket, 'list-buffers'], { encoding: 'utf8' });
  }

  it('its own live pane gets the paste and its Enter; a wrong session, process or pane id gets nothing', async () => {
    // Pane ids past %3 on purpose: a `%4` in a display-message format comes back mangled by strftime.
    for (let i = 0; i < 11; i++) await reader(`cal-filler-${i}`, path.join(root, `filler-${i}.txt`));
    const file = path.join(root, 'own.txt');
    const pane = await reader('cal-own-1', file);
    expect(Number(pane.paneId.slice(1))).toBeGreaterThanOrEqual(11);
    await new Promise((r) => setTimeout(r, 300));
    expect(await tmux.pasteIfOwn({ paneId: pane.paneId, session: 'cal-own-1', pid: pane.pid }, 'first; with a semicolon')).toBe(true);
    expect(await lines(file, 1)).toEqual(['first; with a semicolon']);
    expect(await tmux.pasteIfOwn({ paneId: pane.paneId, session: 'cal-other-1', pid: pane.pid }, 'wrong session')).toBe(false);
    expect(await tmux.pasteIfOwn({ paneId: pane.paneId, session: 'cal-own-1', pid: pane.pid + 100000 }, 'wrong process')).toBe(false);
    expect(await tmux.pasteIfOwn({ paneId: '%9999', session: 'cal-own-1' }, 'no such pane')).toBe(false);
    // Recorded without a pid (an older handle): the session name alone tells the pane apart.
    expect(await tmux.pasteIfOwn({ paneId: pane.paneId, session: 'cal-own-1' }, 'second')).toBe(true);
    expect(await lines(file, 2)).toEqual(['first; with a semicolon', 'second']);
    expect(await buffers()).toBe('');
  });

  it('sixteen cals pasting at once into sixteen panes each paste into their own', async () => {
    const panes = await Promise.all(Array.from({ length: 16 }, (_, i) => reader(`cal-many-${i}`, path.join(root, `many-${i}.txt`))));
    await new Promise((r) => setTimeout(r, 300));
    const pasted = await Promise.all(panes.map((p, i) => new TmuxServer(tmux.socket).pasteIfOwn({ paneId: p.paneId, session: `cal-many-${i}`, pid: p.pid }, `to ${i}`)));
    expect(pasted).toEqual(panes.map(() => true));
    for (const [i] of panes.entries()) expect(await lines(path.join(root, `many-${i}.txt`), 1)).toEqual([`to ${i}`]);
  });

  it('a dead pane (kept by remain-on-exit) and a stopped server get nothing, and no error', async () => {
    const file = path.join(root, 'dead.txt');
    const pane = await tmux.newPane({ session: 'cal-dead-1', cwd: root, argv: ['/bin/sh', '-c', 'exit 3'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    for (let i = 0; i < 50 && !(await tmux.paneState(pane.paneId)).dead; i++) await new Promise((r) => setTimeout(r, 50));
    expect((await tmux.paneState(pane.paneId)).dead).toBe(true);
    expect(await tmux.pasteIfOwn({ paneId: pane.paneId, session: 'cal-dead-1', pid: pane.pid }, 'to the dead')).toBe(false);
    expect(existsSync(file)).toBe(false);
    expect(await buffers()).toBe('');
    const stopped = new TmuxServer(path.join(root, 'no-server.sock'));
    expect(await stopped.pasteIfOwn({ paneId: '%0', session: 'cal-x-1' }, 'to nobody')).toBe(false);
  });

  it('a server that died and left its socket behind gets nothing, and no error', async () => {
    const socket = path.join(root, 'died.sock');
    const file = path.join(root, 'died.txt');
    const env = { ...process.env, TMUX: '' };
    execFileSync('tmux', ['-S', socket, 'new-session', '-d', '-s', 'cal-died-1', '--', '/bin/sh', '-c', `cat > ${file}`], { env });
    const [serverPid, panePid] = execFileSync('tmux', ['-S', socket, 'display-message', '-p', '-t', 'cal-died-1', '#{pid} #{pane_pid}'], { env, encoding: 'utf8' }).trim().split(' ').map(Number);
    process.kill(serverPid!, 'SIGKILL');
    process.kill(panePid!, 'SIGKILL');
    for (let i = 0; i < 50 && processExists(serverPid!); i++) await new Promise((r) => setTimeout(r, 20));
    expect(existsSync(socket)).toBe(true);
    // With the pane's process on record (gone with the server: no tmux client is started) and without.
    expect(await new TmuxServer(socket).pasteIfOwn({ paneId: '%0', session: 'cal-died-1', pid: panePid }, 'to a dead server')).toBe(false);
    expect(await new TmuxServer(socket).pasteIfOwn({ paneId: '%0', session: 'cal-died-1' }, 'to a dead server')).toBe(false);
    expect(existsSync(file) ? readFileSync(file, 'utf8') : '').toBe('');
  });

  it('a session name a tmux format cannot quote is checked in a call of its own, with the same answers', async () => {
    const file = path.join(root, 'odd.txt');
    const pane = await reader('odd,name}', file);
    await new Promise((r) => setTimeout(r, 300));
    expect(await tmux.pasteIfOwn({ paneId: pane.paneId, session: 'odd,name}', pid: pane.pid }, 'odd')).toBe(true);
    expect(await lines(file, 1)).toEqual(['odd']);
    expect(await tmux.pasteIfOwn({ paneId: pane.paneId, session: 'odd,name', pid: pane.pid }, 'wrong')).toBe(false);
  });
});
