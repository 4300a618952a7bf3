import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleFromStderr } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { recordFault } from '../support/fault-matrix.js';

/**
 * Issue 13, item 6, with the real Claude Code: a message that starts or resumes a session goes
 * to the CLI in its argv. Past tmux's 16 KB command limit it still arrives (the launch goes
 * through a launch script); past the kernel's limit for one argument it is a typed usage error
 * that says the limit, before anything is sent; a live pane takes any size by paste.
 */
const pad = (kb: number) => ' filler'.repeat(Math.ceil((kb * 1024) / 7));

describe('message size on every path of the tmux transport', () => {
  let s: CliSuite;
  let handle: string;

  beforeAll(async () => {
    s = await cliSuite('claude-code', { prefix: 'message-size' });
  });
  afterAll(async () => s.close());

  it('a 40 KB first message starts the session (over tmux 16 KB command limit)', async () => {
    const run = await s.cal(['start', '--provider', 'claude-code', '--cwd', s.work, '--timeout', '90', `Remember the codeword GRANITE.${pad(40)}`]);
    expect(run.code, run.stderr).toBe(0);
    handle = handleFromStderr(run.stderr) as string;
  });

  it('a 40 KB message resumes the session after its pane is gone', async () => {
    expect((await s.cal(['kill-tmux', handle])).code).toBe(0);
    const run = await s.cal(['continue', handle, '--timeout', '90', `What was the codeword?${pad(40)}`]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('The codeword was GRANITE.');
  });

  it('a 300 KB message goes into the live pane by paste', async () => {
    // (A message this size cannot be one argument of cal's own argv either: it comes on stdin.)
    const run = await s.cal(['continue', handle, '--timeout', '90', '-'], { input: `[[cal:reply=pasted whole]]${pad(300)}` });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('pasted whole');
  });

  it('a 300 KB message that would need a relaunch is usage (2) naming the limit; the session goes on', async () => {
    expect((await s.cal(['kill-tmux', handle])).code).toBe(0);
    const run = await s.cal(['continue', handle, '--json', '-'], { input: `What was the codeword?${pad(300)}` });
    expect(run.code, run.stdout).toBe(2);
    expect(run.json.error.kind).toBe('usage');
    expect(run.json.error.message).toMatch(/at most 127 KB/);
    const next = await s.cal(['continue', handle, '--timeout', '90', 'What was the codeword?']);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stdout.trim()).toBe('The codeword was GRANITE.');
    recordFault({
      id: 'bound.launch-message-size',
      area: 'bound',
      fault: 'a message of 40 KB (over tmux 16 KB command limit) and of 300 KB (over the kernel limit for one argument) that starts or resumes a session',
      how: '`cal start` / `cal continue` after `kill-tmux`, the message on stdin (real Claude Code 2.1.328)',
      outcome: '40 KB: delivered through the launch script, exit 0, recalled. 300 KB: exit 2 (usage) naming the 127 KB limit; into a live pane it is pasted whole (exit 0)',
      state: 'handle valid; the session continues',
      test: 'test/faults/message-size.test.ts',
    });
  });

  it('a 300 KB first message is usage (2) naming the limit, not an internal error', async () => {
    const run = await s.cal(['start', '--provider', 'claude-code', '--cwd', s.work, '--json', '-'], { input: `hello${pad(300)}` });
    expect(run.code, run.stdout).toBe(2);
    expect(run.json.error.message).toMatch(/at most 127 KB/);
  });
});
