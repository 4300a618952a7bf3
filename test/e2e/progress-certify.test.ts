import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { scratchDir } from '../support/cal.js';
import { calBin, cliBin } from '../support/clis.js';

/** Issue 9: certify's long wait shows a spinner on a terminal, without tearing its table. */
describe('cal certify on a terminal', () => {
  let socket = '';

  afterAll(async () => {
    if (socket) await execa('tmux', ['-S', socket, 'kill-server'], { reject: false });
  });

  it('shows a spinner with the count done, then the table rows intact', async () => {
    const root = await scratchDir('progress-certify');
    socket = path.join(root, 'tmux.sock');
    const done = path.join(root, 'done');
    const command = `node ${calBin} --state-dir ${path.join(root, 'state')} certify --provider claude-code --cli-path ${cliBin('claude')} --only CertFreshLaunch,CertPasteIntoLivePane; echo $? > ${done}; sleep 60`;
    await execa('tmux', ['-S', socket, 'new-session', '-d', '-x', '180', '-y', '20', command], { env: { PATH: process.env.PATH ?? '', TERM: 'xterm-256color', HOME: root } });
    const screen = async () => (await execa('tmux', ['-S', socket, 'capture-pane', '-p'])).stdout;
    let sawSpinner = false;
    for (let i = 0; i < 600 && !(await fs.stat(done).catch(() => null)); i++) {
      if (/certifying · \d of 2 done · \d+s/.test(await screen())) sawSpinner = true;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect((await fs.readFile(done, 'utf8')).trim()).toBe('0');
    expect(sawSpinner).toBe(true);
    const final = await screen();
    expect(final).toMatch(/^CertFreshLaunch +P0 +pass /m);
    expect(final).toMatch(/^CertPasteIntoLivePane +P0 +pass /m);
    expect(final).not.toMatch(/certifying ·/);
  });
});
