import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { nudgeUnreaped } from '../../src/tmux/pane-types.js';
import { unreapedChildOf } from '../../src/util/process-identity.js';
import { scratchDirSync } from '../support/scratch.js';

/**
 * tmux 3.3a built with utempter can miss the SIGCHLD of a pane's process (tmux issue 4559): the
 * pane reads dead with no dead time, its process stays the server's zombie, and `pane-died` (whose
 * hook ends the pane) waits for the next SIGCHLD. cal sends it when it reads such a pane. A
 * process standing in for the server, with a child it never reaps, records what it was sent.
 */
describe('a dead pane tmux has not reaped', () => {
  const servers: number[] = [];
  afterEach(() => {
    for (const pid of servers.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already ended
      }
    }
  });

  const until = async (done: () => boolean) => {
    for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 50));
  };

  /**
   * A shell whose child waits until the node process it becomes says it is ready (its SIGCHLD
   * handler set), then ends: a zombie that node never reaps. That child's own SIGCHLD is waited
   * for before the test begins (on a loaded machine it arrived after the test had cleared the
   * record, and read as cal's).
   */
  async function standInServer() {
    const file = path.join(scratchDirSync('unreaped'), 'signals');
    const record = `const fs = require('fs'); process.on('SIGCHLD', () => fs.appendFileSync(${JSON.stringify(file)}, 'CHLD')); fs.writeFileSync(${JSON.stringify(file)}, 'ready'); setInterval(() => {}, 1000);`;
    const child = spawn('/bin/sh', ['-c', '(until [ -s "$1" ]; do sleep 0.05; done) & exec "$2" -e "$0"', record, file, process.execPath], { stdio: 'ignore' });
    const pid = child.pid!;
    servers.push(pid);
    const childOf = () => readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    await until(() => existsSync(file) && readFileSync(file, 'utf8') === 'readyCHLD' && childOf() !== '' && unreapedChildOf(Number(childOf()), pid));
    expect(readFileSync(file, 'utf8')).toBe('readyCHLD');
    const zombie = Number(childOf());
    expect(unreapedChildOf(zombie, pid)).toBe(true);
    writeFileSync(file, '');
    return { pid: String(pid), zombie: String(zombie), signalled: () => readFileSync(file, 'utf8').includes('CHLD') };
  }

  it('gets the server a SIGCHLD when the pane is dead with no dead time and its process is the server’s zombie, and only then', async () => {
    const server = await standInServer();
    nudgeUnreaped('0', '', server.pid, server.zombie);
    nudgeUnreaped('1', '1796609864', server.pid, server.zombie);
    nudgeUnreaped('1', '', server.pid, String(process.pid));
    nudgeUnreaped('1', '', String(process.pid), server.zombie);
    await new Promise((r) => setTimeout(r, 300));
    expect(server.signalled()).toBe(false);
    nudgeUnreaped('1', '', server.pid, server.zombie);
    await until(server.signalled);
    expect(server.signalled()).toBe(true);
  });

  it('a server that has gone, or a field that is not a pid, is left alone without an error', () => {
    for (const [serverPid, panePid] of [['2147483646', '2147483645'], ['', ''], ['-1', '1'], ['0', '1']]) {
      expect(() => nudgeUnreaped('1', '', serverPid, panePid)).not.toThrow();
    }
  });
});
