import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tmuxSocketFor } from '../../src/engine/tmux-socket.js';
import { TmuxServer } from '../../src/tmux/tmux.js';
import { scratchDir } from '../support/cal.js';
import { recordFault } from '../support/fault-matrix.js';
import { removeScratch } from '../support/scratch.js';

/**
 * tmux reads an argument that ends in `;` as the end of a command (and a final `\;` as `;`).
 * A launch's argv (a first message, a system prompt) must reach the CLI exactly as given: never
 * cut, and never split into a second tmux command made of the arguments that follow.
 */
async function waitFor(file: string): Promise<string> {
  for (let i = 0; i < 100 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 100));
  return fs.readFile(file, 'utf8');
}

describe('a launch argv reaches the pane exactly', () => {
  let root: string;
  let tmux: TmuxServer;

  beforeAll(async () => {
    root = await scratchDir('sec-tmuxargv');
    tmux = new TmuxServer(await tmuxSocketFor(path.join(root, 'tmux')));
  });

  afterAll(async () => {
    await tmux.killServer();
    await removeScratch(root);
  });

  it('arguments ending in ; or \\; or made of ; alone arrive unchanged, and no tmux command runs from them', async () => {
    const out = path.join(root, 'argv.json');
    const tricky = ['be terse;', ';', 'a\\;', 'kill-server', 'x;', 'display-message', 'ends with two;;', 'last one;'];
    await tmux.newPane({
      session: 'argv',
      cwd: root,
      argv: [process.execPath, '-e', `require('fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify(process.argv.slice(1))); setTimeout(() => {}, 30000)`, ...tricky],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root },
    });
    expect(JSON.parse(await waitFor(out))).toEqual(tricky);
    // `kill-server` among the arguments must not have run as a tmux command.
    expect(await tmux.hasSession('argv')).toBe(true);
    recordFault({
      id: 'input.tmux-argv-semicolon',
      area: 'input',
      fault: "a launch argument ending in ';' (first message, system prompt) cut by tmux, the arguments after it read as another tmux command",
      how: "a pane launched with arguments 'be terse;', ';', 'a\\;', 'kill-server', 'x;' …; the process prints its argv",
      outcome: 'every argument arrives unchanged (cal escapes a final ; for tmux); no tmux command runs from them',
      state: '-',
      test: 'test/security/tmux-argv.test.ts',
    });
  });

  it('a paste ending in ; arrives whole, its Enter after it', async () => {
    const out = path.join(root, 'paste.txt');
    const pane = await tmux.newPane({
      session: 'paste',
      cwd: root,
      argv: [process.execPath, '-e', `let s = ''; process.stdin.setRawMode?.(true); process.stdin.on('data', (d) => { s += d; if (s.includes('\\r')) require('fs').writeFileSync(${JSON.stringify(out)}, s); })`],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root },
    });
    await new Promise((r) => setTimeout(r, 300));
    await tmux.paste(pane.paneId, 'one; two;');
    expect(await waitFor(out)).toBe('one; two;\r');
  });
});

