import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CalRun } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { recordFault } from '../support/fault-matrix.js';

/**
 * Issue 7: keys and tokens from the environment never reach handles, turn records, events, logs,
 * error messages, --json output or inspect. A real Claude Code session runs every path that
 * writes state or prints (start, paste, failure, lost pane and resume, timeout, inspect, events,
 * usage errors) with distinctive secret values, then the whole state dir and every output are
 * searched for them.
 */
const secrets: Record<string, string> = {
  ANTHROPIC_API_KEY: 'sk-ant-CALSECRET1-4be1d0a7c9f2e3b5a6d8c0e1f2a3b4c5',
  ANTHROPIC_AUTH_TOKEN: 'CALSECRET2-authtoken-93f0c2d17e5b4a68',
  OPENAI_API_KEY: 'sk-proj-CALSECRET3-0c9b8a7f6e5d4c3b',
  GITHUB_TOKEN: 'ghp_CALSECRET4aBcDeFgHiJkLmNoPqRsTuV',
  MY_SERVICE_KEY: 'CALSECRET5-service-key-5a4b3c2d1e',
  AWS_SECRET_ACCESS_KEY: 'CALSECRET6/wJalrXUtnFEMIK7MDENGbPxRfiCY',
};

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(p)));
    else if (entry.isFile()) out.push(p);
  }
  return out;
}

/** The secret itself, and its distinctive middle (a truncated or re-encoded copy still shows it). */
function needles(value: string): string[] {
  return [value, value.slice(4, 20), Buffer.from(value).toString('base64').slice(0, 16)];
}

describe('secrets from the environment never leave it', () => {
  let suite: CliSuite;
  let root: string;
  let state: string;
  let work: string;
  const runs: { args: string[]; run: CalRun }[] = [];

  const cal = async (args: string[], input?: string) => {
    const run = await suite.cal(args, { input });
    runs.push({ args, run });
    return run;
  };

  beforeAll(async () => {
    suite = await cliSuite('claude-code', { prefix: 'sec-secrets', env: secrets });
    ({ root, state, work } = suite);
  });

  afterAll(async () => {
    await suite?.close();
  });

  it('a session through every output path, then nothing in the state dir or any output holds a secret', async () => {
    const start = await cal(['start', '--provider', 'claude-code', '--cwd', work, '--name', 'keyed', '--json', '--events', 'Remember the codeword KIWI.']);
    expect(start.code).toBe(0);
    const handle = start.json.handle as string;
    expect((await cal(['continue', handle, 'What was the codeword?'])).stdout.trim()).toBe('The codeword was KIWI.');
    expect((await cal(['continue', handle, '--json', 'This fails [[cal:http=500]]'])).code).toBe(10);
    expect((await cal(['kill-tmux', handle])).code).toBe(0);
    expect((await cal(['continue', 'keyed', '--events', 'What was the codeword?'])).code).toBe(0);
    const slow = await cal(['continue', handle, '--json', '--timeout', '1', 'Slow one [[cal:delay=2500]]']);
    expect(slow.code).toBe(14);
    await new Promise((r) => setTimeout(r, 3000));
    await cal(['inspect', handle, '--json']);
    await cal(['inspect', handle]);
    await cal(['inspect', '--json']);
    await cal(['inspect']);
    await cal(['events', handle]);
    await cal(['continue', handle]);
    await cal(['continue', 'no-such-handle', '--json', 'hi']);
    await cal(['start', '--provider', 'claude-code', '--cwd', path.join(root, 'missing'), 'hi']);

    const hits: string[] = [];
    for (const file of await filesUnder(state)) {
      const text = (await fs.readFile(file)).toString('latin1');
      for (const [name, value] of Object.entries(secrets)) {
        for (const n of needles(value)) if (text.includes(n)) hits.push(`${path.relative(state, file)} holds ${name}`);
      }
    }
    for (const { args, run } of runs) {
      for (const [name, value] of Object.entries(secrets)) {
        for (const n of needles(value)) {
          if (run.stdout.includes(n) || run.stderr.includes(n)) hits.push(`output of cal ${args.join(' ')} holds ${name}`);
        }
      }
    }
    expect(hits).toEqual([]);
    // The handle keeps the names the session needs, never their values.
    const view = await suite.inspect(handle);
    expect(view.provider.envNames).toEqual(expect.arrayContaining(['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN']));
    // The secrets did reach the CLI (its process environment holds them): the test is not vacuous.
    const socket = await suite.tmuxSocket();
    const pid = (await execa('tmux', ['-S', socket, 'display-message', '-p', '-t', view.provider.tmux.paneId, '#{pane_pid}'])).stdout.trim();
    const environ = await fs.readFile(`/proc/${pid}/environ`, 'utf8');
    for (const [name, value] of Object.entries(secrets)) expect(environ).toContain(`${name}=${value}`);
    const files = (await filesUnder(state)).length;
    recordFault({
      id: 'secret.env-keys',
      area: 'secret',
      fault: 'API keys and tokens in the environment (ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, OPENAI_API_KEY, GITHUB_TOKEN, *_KEY, AWS secret)',
      how: 'a real Claude Code session: start, paste, HTTP 500, kill-tmux and resume, timeout, inspect (text, JSON, all), events, usage and not_found errors',
      outcome: `no value (nor a distinctive part of it) in any of ${files} state files or ${runs.length} stdout/stderr outputs; handles keep variable names only`,
      state: 'handle valid',
      test: 'test/security/secrets.test.ts',
    });
  });
});
