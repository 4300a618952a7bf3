import { execa } from 'execa';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tmuxSocketFor } from '../../src/engine/tmux-socket.js';
import { handleFromStderr } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { recordFault } from '../support/fault-matrix.js';

/**
 * Issue 13, item 11, with the real Claude Code: a process the session started (a detached shell
 * tool in its own session) does not outlive the pane, whether the pane is killed or lost; and a
 * cal with another TMPDIR finds the same tmux server.
 */
async function sleepers(seconds: string): Promise<number[]> {
  const res = await execa('pgrep', ['-f', `sleep ${seconds}`], { reject: false });
  return res.stdout.split('\n').filter(Boolean).map(Number);
}

describe('no process of an ended pane lives on', () => {
  let s: CliSuite;
  let handle: string;

  beforeAll(async () => {
    s = await cliSuite('claude-code', { prefix: 'process-tree' });
    // The scripted model's shell tool calls need Bash allowed, outside auto mode (whose safety
    // check cannot reach a server offline, and opens a dialog for a detached command).
    const settings = path.join(s.env.HOME as string, '.claude', 'settings.json');
    await fs.mkdir(path.dirname(settings), { recursive: true });
    await fs.writeFile(settings, JSON.stringify({ permissions: { allow: ['Bash'], defaultMode: 'dontAsk' }, skipDangerousModePermissionPrompt: true }), { mode: 0o600 });
    const run = await s.cal(['start', '--provider', 'claude-code', '--cwd', s.work, '--timeout', '90', 'Remember the codeword CEDAR.']);
    expect(run.code, run.stderr).toBe(0);
    handle = handleFromStderr(run.stderr) as string;
  });
  afterAll(async () => {
    for (const pid of [...(await sleepers('4321')), ...(await sleepers('4322'))]) process.kill(pid, 'SIGKILL');
    await s.close();
  });

  it('kill-tmux ends a detached child of the CLI’s shell tool', async () => {
    const run = await s.cal(['continue', handle, '--timeout', '90', 'Start it [[cal:shell=setsid sleep 4321 >/dev/null 2>&1 < /dev/null & echo started]]']);
    expect(run.code, run.stderr).toBe(0);
    expect(await sleepers('4321')).not.toEqual([]);
    expect((await s.cal(['kill-tmux', handle])).code).toBe(0);
    expect(await sleepers('4321')).toEqual([]);
  });

  it('after the CLI is SIGKILLed, the next continue ends what its pane left behind before it resumes', async () => {
    const started = await s.cal(['continue', handle, '--timeout', '90', 'Again [[cal:shell=setsid sleep 4322 >/dev/null 2>&1 < /dev/null & echo started]]']);
    expect(started.code, started.stderr).toBe(0);
    expect(await sleepers('4322')).not.toEqual([]);
    const view = (await s.cal(['inspect', handle, '--json'])).json;
    const cli = await execa('pgrep', ['-f', `claude.*${view.provider.nativeSessionId}`], { reject: false });
    for (const pid of cli.stdout.split('\n').filter(Boolean)) process.kill(Number(pid), 'SIGKILL');
    const next = await s.cal(['continue', handle, '--timeout', '90', 'What was the codeword?']);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stdout.trim()).toBe('The codeword was CEDAR.');
    expect(await sleepers('4322')).toEqual([]);
    recordFault({
      id: 'fault.detached-tool-process',
      area: 'fault',
      fault: 'a process the CLI’s shell tool detached (`setsid sleep &`) outliving the pane, also after the CLI was SIGKILLed',
      how: 'a scripted Bash tool call, then `cal kill-tmux`; again, then `kill -9` of the CLI and `cal continue` (real Claude Code 2.1.328)',
      outcome: 'the detached process is ended with the pane (found by the pane’s environment tag); the resumed session recalls (exit 0)',
      state: 'no process of the old pane left; handle valid',
      test: 'test/faults/process-tree.test.ts',
    });
  });

  it('a cal with another TMPDIR reaches the same tmux server (no second CLI on the session)', async () => {
    const deep = path.join(s.root, 'x'.repeat(60), 'y'.repeat(60));
    const a = await tmuxSocketFor(deep);
    const before = process.env.TMPDIR;
    process.env.TMPDIR = path.join(s.root, 'other-tmp');
    try {
      expect(await tmuxSocketFor(deep)).toBe(a);
    } finally {
      if (before === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = before;
    }
  });
});
