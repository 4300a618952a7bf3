import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleFromStderr } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';

/**
 * Issue 40, item 1, with the real pinned Claude Code in real tmux: a working directory named with
 * tmux format syntax runs nothing, and the CLI's own transcript records exactly that directory
 * (before, tmux expanded `-c`: `#(cmd)` ran in the server, `##1` sent the CLI elsewhere).
 */
describe('a working directory named like a tmux format, with the real Claude Code', () => {
  let suite: CliSuite;

  beforeAll(async () => {
    suite = await cliSuite('claude-code', { prefix: 'cwd-names' });
  });

  afterAll(async () => {
    await suite.close();
  });

  it.each(['evil#(touch PWN)', 'proj##1'])('the CLI runs in %j, and nothing runs from its name', async (name) => {
    const pwn = path.join(suite.home, 'pwn');
    const dir = await suite.workDir(name.replace('PWN', pwn));
    const run = await suite.cal(['start', '--provider', 'claude-code', '--cwd', dir, 'Remember the codeword TANGO.']);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe('OK, I will remember the codeword TANGO.');
    const view = await suite.inspect(handleFromStderr(run.stderr) ?? '');
    const records = (await fs.readFile(view.provider.transcript.path, 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { cwd?: string });
    const cwds = new Set(records.map((r) => r.cwd).filter(Boolean));
    expect([...cwds]).toEqual([dir]);
    expect(existsSync(pwn)).toBe(false);
  });
});
