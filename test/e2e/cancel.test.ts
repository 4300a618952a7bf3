import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleFromStderr } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { calBin } from '../support/clis.js';

/**
 * Ctrl-C on `cal continue` (issue 18: an AbortSignal cancels a call the way Ctrl-C does the
 * command), with the real Claude Code: the CLI is interrupted as a person at its pane would,
 * the turn is settled from its record, the handle's lock is released, the session goes on.
 */
describe('cancelling a running turn', () => {
  let s: CliSuite;
  let handle: string;

  beforeAll(async () => {
    s = await cliSuite('claude-code', { prefix: 'cancel' });
    const run = await s.cal(['start', '--provider', 'claude-code', '--cwd', s.work, '--timeout', '90', 'Remember the codeword LOTUS.']);
    expect(run.code, run.stderr).toBe(0);
    handle = handleFromStderr(run.stderr) as string;
  });
  afterAll(async () => s.close());

  it('SIGINT settles the turn as interrupted (exit 11), releases the handle, and the session recalls after', async () => {
    const child = spawn(process.execPath, [calBin, '--state-dir', s.state, 'continue', handle, '--json', 'A long one [[cal:chunks=20]][[cal:chunk-delay=1000]][[cal:reply=slow answer here]]'], { env: s.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    // Wait until the CLI recorded the turn (it is running), then Ctrl-C.
    for (let i = 0; i < 200; i++) {
      const turns = (await s.cal(['inspect', handle, '--json'])).json.turns as Array<{ status: string }>;
      if (turns.at(-1)?.status === 'running') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    child.kill('SIGINT');
    const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    expect(code, stdout).toBe(11);
    const turns = (await s.cal(['inspect', handle, '--json'])).json.turns as Array<{ status: string; message: string }>;
    expect(turns.at(-1)).toMatchObject({ status: 'interrupted' });
    const next = await s.cal(['continue', handle, '--timeout', '90', 'What was the codeword?']);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stdout.trim()).toBe('The codeword was LOTUS.');
  });
});
