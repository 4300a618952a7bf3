import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CalError } from '../../src/errors.js';
import { tmuxSocketFor } from '../../src/engine/tmux-socket.js';
import { TmuxServer } from '../../src/tmux/tmux.js';
import { scratchDir } from '../support/cal.js';
import { removeScratch } from '../support/scratch.js';

/**
 * A working directory's name never reaches a tmux argument that tmux expands (issue 40, item 1):
 * `new-session -c` runs formats, so `#(cmd)` ran a command in the tmux server and `##`, `#S`,
 * `#{host}` sent the CLI silently to another directory. The CLI runs in exactly the directory
 * given, or the launch is refused.
 */
async function waitFor(file: string): Promise<string> {
  for (let i = 0; i < 100 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 100));
  return fs.readFile(file, 'utf8');
}

describe('a working directory reaches the pane exactly, never through tmux formats', () => {
  let root: string;
  let tmux: TmuxServer;

  beforeAll(async () => {
    root = await scratchDir('sec-tmuxcwd');
    tmux = new TmuxServer(await tmuxSocketFor(path.join(root, 'tmux')));
  });

  afterAll(async () => {
    await tmux.killServer();
    await removeScratch(root);
  });

  const names = [
    'evil#(touch PWNFILE)',
    'proj##1',
    'notes#S',
    'x#{host}',
    // Beyond the list: other format forms, shell metacharacters, a leading dash, a newline.
    'y#{s/a/b/:pane_id}',
    'z#[fg=red]#D',
    '-dash $(touch PWNFILE) `touch PWNFILE`',
    'semi;colon\\; end;',
    'line\nbreak #(touch PWNFILE)',
    'pct %H%M %%',
    '~tilde',
  ];

  it.each(names)('the CLI runs in %j and nothing is executed', async (name) => {
    const pwn = path.join(root, 'PWNFILE');
    const cwd = path.join(root, 'dirs', name.replace(/PWNFILE/g, pwn));
    mkdirSync(cwd, { recursive: true });
    const out = path.join(root, `cwd-${Math.random().toString(36).slice(2)}.json`);
    const argv = [process.execPath, '-e', `require('fs').writeFileSync(${JSON.stringify(out)}, JSON.stringify({ cwd: process.cwd(), pwd: process.env.PWD })); setTimeout(() => {}, 30000)`];
    const session = `cwd-${Math.random().toString(36).slice(2, 8)}`;
    await tmux.newPane({ session, cwd, argv, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root } });
    const seen = JSON.parse(await waitFor(out)) as { cwd: string; pwd?: string };
    expect(seen.cwd).toBe(cwd);
    expect(seen.pwd).toBe(cwd);
    expect(existsSync(pwn)).toBe(false);
    await tmux.killSession(session);
  });

  it('a directory that is missing, or is a file, is refused before anything is launched', async () => {
    const file = path.join(root, 'plain-file');
    writeFileSync(file, 'x');
    for (const cwd of [path.join(root, 'missing #{host}'), file, 'relative/dir']) {
      const out = path.join(root, 'ran');
      const err = await tmux
        .newPane({ session: 'refused', cwd, argv: ['/bin/sh', '-c', `touch ${out}`], env: { PATH: '/usr/bin:/bin' } })
        .then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(CalError);
      expect((err as CalError).kind).toBe('usage');
      expect(await tmux.hasSession('refused')).toBe(false);
      expect(existsSync(out)).toBe(false);
    }
  });

  it('a session name tmux would expand is refused', async () => {
    const err = await tmux.newPane({ session: `a#(touch ${path.join(root, 'x')})`, cwd: root, argv: ['true'], env: { PATH: '/usr/bin:/bin' } }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(CalError);
  });
});
