import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { baseEnv, killStateTmux, runCal, scratchDir } from '../support/cal.js';
import { cliBin } from '../support/clis.js';
import { recordFault } from '../support/fault-matrix.js';
import { makeWorkDir, removeScratch } from '../support/scratch.js';

/**
 * Issue 20, item 3, with the real Claude Code: in a HOME cal does not manage, a fresh Claude
 * opens its first-run dialogs (the theme picker) and never takes the message. That is a typed
 * failure naming what the pane shows, well before --timeout, not a slow turn.
 */
describe('a CLI stuck in a dialog', () => {
  let server: ModelServer;
  let root: string;

  beforeAll(async () => {
    server = await startModelServer({});
    root = await scratchDir('dialog');
  });
  afterAll(async () => {
    await killStateTmux(path.join(root, 'state'));
    await server.close();
    await removeScratch(root);
  });

  it('is turn_failed (10) with the dialog’s words, long before the timeout', async () => {
    const home = path.join(root, 'unmanaged-home');
    await fs.mkdir(home, { recursive: true });
    const work = await makeWorkDir(root);
    const env = baseEnv({ HOME: home, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_AUTH_TOKEN: 'test-token', DISABLE_AUTOUPDATER: '1' });
    const t0 = Date.now();
    const run = await runCal(['--state-dir', path.join(root, 'state'), 'start', '--provider', 'claude-code', '--cwd', work, '--cli-path', cliBin('claude'), '--timeout', '300', '--json', 'Remember the codeword FJORD.'], { env, timeoutMs: 200_000 });
    const elapsed = Date.now() - t0;
    expect(run.code, run.stdout).toBe(10);
    expect(run.json.error.kind).toBe('turn_failed');
    expect(run.json.error.message).toMatch(/not at its prompt/);
    expect(elapsed).toBeLessThan(120_000);
    expect(server.turnRequests().filter((r) => r.lastUserMessage?.includes('FJORD'))).toEqual([]);
    recordFault({
      id: 'fault.cli-in-dialog',
      area: 'fault',
      fault: 'the CLI sits in a first-run dialog (theme picker in a HOME cal does not manage) and never takes the message',
      how: '`cal start --timeout 300` with a fresh HOME (real Claude Code 2.1.328)',
      outcome: `exit 10 (turn_failed) after ${Math.round(elapsed / 1000)} s: "did not take the message … not at its prompt (a dialog is open?)" with the pane's last words; nothing reached the model`,
      state: 'handle valid; the pane is left for the user to answer (cal inspect, a)',
      test: 'test/faults/dialog.test.ts',
    });
  }, 200_000);
});
