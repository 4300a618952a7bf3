import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tmuxSocketFor } from '../../src/engine/tmux-socket.js';
import { TmuxServer } from '../../src/tmux/tmux.js';
import { scratchDir } from '../support/cal.js';
import { removeScratch } from '../support/scratch.js';

/**
 * A pane launched right after the last session of its tmux server ended (`cal kill-tmux`, then
 * `cal continue` at once): the server is exiting as the launch reaches it, and tmux says "server
 * exited unexpectedly". The launch goes to a new server instead of failing (seen in CI, where
 * the next test's launch met the server its previous test had emptied).
 */
describe('a launch that meets a tmux server on its way out', () => {
  let root: string;
  let tmux: TmuxServer;

  beforeAll(async () => {
    root = await scratchDir('tmux-exit');
    tmux = new TmuxServer(await tmuxSocketFor(path.join(root, 'tmux')));
  });

  afterAll(async () => {
    await tmux.killServer();
    await removeScratch(root);
  });

  it('starts the pane on a new server, every time', async () => {
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root };
    for (let i = 0; i < 40; i++) {
      const pane = await tmux.newPane({ session: `s${i}`, cwd: root, argv: ['sleep', '30'], env });
      expect(pane.session).toBe(`s${i}`);
      // The only session goes: the server exits (exit-empty), and the next launch follows at once.
      await tmux.killSession(`s${i}`);
    }
    expect(await tmux.hasSession('s39')).toBe(false);
  }, 60_000);
});
