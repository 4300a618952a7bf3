import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tmuxSocketFor } from '../../src/engine/tmux-socket.js';
import { TmuxServer } from '../../src/tmux/tmux.js';
import { scratchDir } from '../support/cal.js';
import { recordFault } from '../support/fault-matrix.js';
import { removeScratch } from '../support/scratch.js';

/**
 * A pane's environment (which holds the user's keys) never appears in a process's argv, which
 * every local user can read (ps, /proc/<pid>/cmdline); each pane gets exactly its own environment.
 */
const SECRET_A = 'CALSECRET-A-0f1e2d3c4b5a69788796a5b4';
const SECRET_B = 'CALSECRET-B-9a8b7c6d5e4f30211203f4e5';

async function waitFor(file: string): Promise<string> {
  for (let i = 0; i < 100 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 100));
  return fs.readFile(file, 'utf8');
}

async function allCmdlines(): Promise<string> {
  const out: string[] = [];
  for (const pid of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      out.push((await fs.readFile(`/proc/${pid}/cmdline`, 'utf8')).replace(/\0/g, ' '));
    } catch {
      // exited
    }
  }
  return out.join('\n');
}

describe('pane environments stay out of argv', () => {
  let root: string;
  let tmux: TmuxServer;

  beforeAll(async () => {
    root = await scratchDir('sec-tmuxenv');
    tmux = new TmuxServer(await tmuxSocketFor(path.join(root, 'tmux')));
  });

  afterAll(async () => {
    await tmux.killServer();
    await removeScratch(root);
  });

  it('no secret in any process argv; a second pane gets exactly its own environment', async () => {
    const envA = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, API_KEY_A: SECRET_A, SHARED: 'from-a', 'ODD-NAME': 'odd' };
    const envB = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, API_TOKEN_B: SECRET_B, SHARED: 'from-b' };
    const dump = (name: string) => [
      process.execPath,
      '-e',
      `require('fs').writeFileSync(${JSON.stringify(path.join(root, name))}, Object.entries(process.env).map(([k, v]) => k + '=' + v).join('\\n')); setTimeout(() => {}, 30000)`,
    ];
    await tmux.newPane({ session: 'a', cwd: root, argv: dump('a.env'), env: envA });
    const a = await waitFor(path.join(root, 'a.env'));
    await tmux.newPane({ session: 'b', cwd: root, argv: dump('b.env'), env: envB });
    const b = await waitFor(path.join(root, 'b.env'));
    const cmdlines = await allCmdlines();

    expect(a).toContain(`API_KEY_A=${SECRET_A}`);
    expect(a).toContain('SHARED=from-a');
    expect(a).toContain('ODD-NAME=odd');
    expect(b).toContain(`API_TOKEN_B=${SECRET_B}`);
    expect(b).toContain('SHARED=from-b');
    // Pane a's variables must not reach b through the server's global environment.
    expect(b).not.toContain('API_KEY_A');
    expect(cmdlines).toContain(path.join(root, 'tmux'));
    expect(cmdlines).not.toContain(SECRET_A);
    expect(cmdlines).not.toContain(SECRET_B);
    const server = (await execa('tmux', ['-S', tmux.socket, 'display-message', '-p', '#{pid}'])).stdout.trim();
    expect(await fs.readFile(`/proc/${server}/cmdline`, 'utf8')).not.toMatch(/CALSECRET/);
    recordFault({
      id: 'secret.process-argv',
      area: 'secret',
      fault: "keys in a pane's environment visible in process argv (ps) to other local users",
      how: 'two panes with different keys on one tmux server; every /proc/<pid>/cmdline searched',
      outcome: 'no key in any argv (values travel in the tmux client environment, names in update-environment); each pane gets exactly its own variables',
      state: '-',
      test: 'test/security/tmux-env.test.ts',
    });
  });

  it('variables whose names are not identifiers reach the pane, never argv; nor does the first launch', async () => {
    // A server of its own: the server keeps the argv of the client that started it for its whole
    // life, so the first launch on a fresh server is the one that matters.
    const own = new TmuxServer(await tmuxSocketFor(path.join(root, 'tmux-odd')));
    const odd = {
      'DEPLOY-TOKEN': 'CALSECRET-C-5d4c3b2a1908f7e6d5c4b3a2',
      'my.api.key': 'CALSECRET-D-71625344a5b6c7d8e9f0a1b2',
      'AWS SECRET': 'CALSECRET-E-c3d4e5f60718293a4b5c6d7e',
    };
    const firstMessage = 'CALSECRET-F-first-message-of-the-launch';
    try {
      const out = path.join(root, 'odd.env');
      await own.newPane({
        session: 'odd',
        cwd: root,
        argv: [process.execPath, '-e', `require('fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify(process.env)); setTimeout(() => {}, 30000)`, firstMessage],
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, ...odd },
      });
      const seen = JSON.parse(await waitFor(out)) as Record<string, string>;
      for (const [name, value] of Object.entries(odd)) expect(seen[name]).toBe(value);
      const cmdlines = await allCmdlines();
      for (const value of Object.values(odd)) expect(cmdlines).not.toContain(value);
      const server = (await execa('tmux', ['-S', own.socket, 'display-message', '-p', '#{pid}'])).stdout.trim();
      const serverArgv = await fs.readFile(`/proc/${server}/cmdline`, 'utf8');
      expect(serverArgv).not.toMatch(/CALSECRET/);
      expect(serverArgv).not.toContain(firstMessage);
      recordFault({
        id: 'secret.odd-env-names-argv',
        area: 'secret',
        fault: "variables whose names are not identifiers (DEPLOY-TOKEN, my.api.key, AWS SECRET) put in tmux's argv as -e NAME=value; the first launch's argv kept by the tmux server",
        how: 'a pane with three such variables on a fresh tmux server; every /proc/<pid>/cmdline and the server argv searched',
        outcome: 'the pane gets all three (names in update-environment, one per index; values in the client environment); no value in any argv; the server is started by a client with no pane data in its argv',
        state: '-',
        test: 'test/security/tmux-env.test.ts',
      });
    } finally {
      await own.killServer();
    }
  });
});
