import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { installedMatrix } from '../support/cli-matrix.js';
import { cliBin } from '../support/clis.js';

/**
 * Issue 44: 16 Claude Code sessions started at once in one HOME all get past the start (trust,
 * the version probe) and answer. Seen failing: one pane at the folder-trust dialog after 60 s,
 * and, on a loaded machine, `--version` probes of 2.0.x/2.1.29 killed after 30 s (cli_missing).
 * Each start has a working directory of its own (each needs its own trust entry, written into
 * the one ~/.claude.json the running CLIs rewrite meanwhile); four share one.
 */
const releases = [{ version: 'pinned', bin: cliBin('claude') }, ...installedMatrix('claude-code').filter((r) => r.version === '2.0.12')];

describe.each(releases)('16 Claude Code starts at once in one HOME: $version', ({ version, bin }) => {
  let suite: CliSuite;
  beforeAll(async () => {
    suite = await cliSuite('claude-code', { prefix: `claude-many-${version}` });
  });
  afterAll(async () => {
    await suite?.close();
  });

  it('every one completes with its own answer, and every working directory is trusted', async () => {
    const dirs = await Promise.all(Array.from({ length: 16 }, (_, i) => suite.workDir(i < 4 ? 'shared' : `w${i}`)));
    const runs = await Promise.all(
      dirs.map((cwd, i) => suite.cal(['start', '--provider', 'claude-code', '--cli-path', bin, '--cwd', cwd, '--json', '--timeout', '150', `[[cal:reply=answer ${i}]] start ${i}`])),
    );
    runs.forEach((run, i) => {
      expect(run.code, `start ${i}: ${run.stderr} ${run.stdout}`).toBe(0);
      expect(run.json.turn.answer).toBe(`answer ${i}`);
    });
    const config = JSON.parse(readFileSync(path.join(suite.env.HOME!, '.claude.json'), 'utf8')) as { projects: Record<string, { hasTrustDialogAccepted?: boolean }> };
    for (const cwd of new Set(dirs)) expect(config.projects[cwd]?.hasTrustDialogAccepted, cwd).toBe(true);
    // One message each reached the model.
    for (let i = 0; i < 16; i++) expect(suite.server.turnRequests().filter((r) => r.lastUserMessage === `[[cal:reply=answer ${i}]] start ${i}`)).toHaveLength(1);
  }, 400_000);
});

/**
 * The cause of the dialog above, made certain: a wrapper drops the folder's trust entry from
 * ~/.claude.json just before the real CLI reads it (as another Claude Code's rewrite did). The
 * pane opens at the trust dialog, cal gives it the answer prepare wrote, and the turn completes.
 */
describe.each(releases)('a trust entry lost before Claude Code reads it: $version', ({ version, bin }) => {
  let suite: CliSuite;
  beforeAll(async () => {
    suite = await cliSuite('claude-code', { prefix: `claude-trust-lost-${version}` });
  });
  afterAll(async () => {
    await suite?.close();
  });

  it('the trust dialog in the pane gets the answer cal gave, and the turn completes', async () => {
    const wrapper = path.join(suite.root, 'claude-losing-trust');
    const drop = `const fs = require('fs'); const f = process.env.HOME + '/.claude.json'; const c = JSON.parse(fs.readFileSync(f, 'utf8')); delete c.projects[process.cwd()]; fs.writeFileSync(f, JSON.stringify(c));`;
    writeFileSync(wrapper, `#!/bin/sh\nif [ "$1" != "--version" ]; then node -e ${JSON.stringify(drop).replace(/\$/g, '\\$')}; fi\nexec ${JSON.stringify(bin)} "$@"\n`);
    chmodSync(wrapper, 0o755);
    const cwd = await suite.workDir('untrusted');
    const run = await suite.cal(['start', '--provider', 'claude-code', '--cli-path', wrapper, '--cwd', cwd, '--json', '--timeout', '120', '[[cal:reply=past the dialog]] hello']);
    expect(run.code, `${run.stderr} ${run.stdout}`).toBe(0);
    expect(run.json.turn.answer).toBe('past the dialog');
  }, 200_000);
});
