import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleFromStderr } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';

/**
 * Every process cal spawns runs as a shell would run it in its working directory: PWD names that
 * directory, whatever cal's own PWD was. OpenCode takes its instance's directory from PWD, not
 * from the process's cwd: on 91258d3, `cal start --provider opencode --transport structured --cwd D`
 * run from another folder (with PWD set to that folder, as a shell sets it) ran OpenCode in the
 * caller's folder, where cal never found the session, and waited to its timeout (3 runs of 3).
 */
const TIMEOUT = ['--timeout', '120'];

describe('a CLI started from another directory runs in --cwd (PWD is its working directory)', () => {
  let suite: CliSuite;
  let elsewhere = '';

  beforeAll(async () => {
    suite = await cliSuite('opencode', { prefix: 'spawn-env' });
    elsewhere = await suite.workDir('elsewhere');
  });
  afterAll(async () => {
    await suite?.close();
  });

  for (const transport of ['structured', 'tmux'] as const) {
    it(`OpenCode (${transport}): the turn completes and its shell tool runs in --cwd, not in the caller's folder`, async () => {
      const run = await suite.cal(['start', '--provider', 'opencode', '--transport', transport, '--cwd', suite.work, ...TIMEOUT, '--json', 'Where am I? [[cal:shell=pwd]]'], {
        cwd: elsewhere,
        env: { PWD: elsewhere },
      });
      expect(run.code, run.stderr).toBe(0);
      expect(run.json.turn).toMatchObject({ status: 'completed', answer: `Tool finished: ${suite.work}` });
      const view = await suite.inspect(run.json.handle ?? handleFromStderr(run.stderr) ?? '');
      expect(view.provider.nativeSessionId).toMatch(/^ses_/);
      // Nothing of the session was made in the caller's folder.
      expect(await fs.readdir(elsewhere)).toEqual([]);
      expect(path.isAbsolute(suite.work)).toBe(true);
    });
  }
});
