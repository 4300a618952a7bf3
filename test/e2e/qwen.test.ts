import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkCliNode } from '../../src/adapters/resolve.js';
import { projectSlug } from '../../src/adapters/qwen/home.js';
import { eventsOf, handleFromStderr } from '../support/cal.js';
import { cliSuite, pinnedVersion, type CliSuite } from '../support/cli-suite.js';
import { cliBin } from '../support/clis.js';

/**
 * Qwen Code acceptance: the real pinned binary (0.24.4) against the scripted model, driven
 * through the built `cal` as a black box, in tmux and through its headless stream-json transport.
 * The tests of each transport build on each other (one logical session), so they run in order.
 * Qwen declares Node >= 22: CI puts Node 22 first on PATH (docs/node.md); on an older node cal
 * refuses the CLI (cli_unsupported), and this says so instead of failing.
 */
const TIMEOUT = ['--timeout', '120'];

const nodeTooOld = await checkCliNode(realpathSync(cliBin('qwen')), { PATH: process.env.PATH ?? '' }).then(
  () => null,
  (e: unknown) => (e instanceof Error ? e.message : String(e)),
);
if (nodeTooOld) console.warn(`skipped: ${nodeTooOld}`);

async function readSession(file: string): Promise<any[]> {
  return (await fs.readFile(file, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** The prompts a person typed, in the session file. */
async function prompts(file: string): Promise<string[]> {
  return (await readSession(file)).filter((r) => r.type === 'user' && r.provenance === 'real_user').map((r) => r.message.parts.map((p: { text?: string }) => p.text ?? '').join(''));
}

describe.skipIf(nodeTooOld !== null)('Qwen Code in tmux, end to end', () => {
  let suite: CliSuite;
  let handle = '';

  beforeAll(async () => {
    suite = await cliSuite('qwen', { prefix: 'qwen-e2e' });
  });
  afterAll(async () => {
    await suite?.close();
  });

  it('starts and remembers: the handle binds the id cal chose to Qwen\'s own session file for this folder', async () => {
    const run = await suite.cal(['start', '--provider', 'qwen', '--cwd', suite.work, ...TIMEOUT, 'Remember the codeword KIWI.']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('OK, I will remember the codeword KIWI.');
    handle = handleFromStderr(run.stderr) ?? '';
    const view = await suite.inspect(handle);
    expect(view.provider.nativeSessionId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(view.provider.cli.version).toBe(pinnedVersion('qwen'));
    expect(view.currentPaneAlive).toBe(true);
    expect(view.provider.transcript.path).toBe(path.join(suite.configDir, 'projects', projectSlug(suite.work), 'chats', `${view.provider.nativeSessionId}.jsonl`));
    expect(await prompts(view.provider.transcript.path)).toEqual(['Remember the codeword KIWI.']);
  });

  it('continue with the pane alive pastes into it and recalls; the memory extraction Qwen sends after each turn is no user turn', async () => {
    suite.server.clearLog();
    const run = await suite.cal(['continue', handle, '--json', '--events', ...TIMEOUT, 'What was the codeword?']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was KIWI.' });
    expect(eventsOf(run)).toEqual(['running', 'completed']);
    const turns = suite.server.turnRequests();
    expect(turns).toHaveLength(1);
    expect(turns[0]!.userMessages).toEqual(['Remember the codeword KIWI.', 'What was the codeword?']);
  });

  it('after kill-tmux, continue resumes natively (qwen --resume): the model log shows one new user message, the same session file appended', async () => {
    const before = await suite.inspect(handle);
    expect((await suite.cal(['kill-tmux', handle])).code).toBe(0);
    suite.server.clearLog();
    const run = await suite.cal(['continue', handle, '--json', '--events', ...TIMEOUT, 'What was the codeword, again?']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn.answer).toBe('The codeword was KIWI.');
    expect(eventsOf(run)).toEqual(['lost_tmux', 'resuming', 'running', 'completed']);
    const after = await suite.inspect(handle);
    expect(after.panes).toHaveLength(2);
    expect(after.provider.nativeSessionId).toBe(before.provider.nativeSessionId);
    expect(after.provider.transcript.path).toBe(before.provider.transcript.path);
    const turns = suite.server.turnRequests();
    expect(turns).toHaveLength(1);
    expect(turns[0]!.userMessages).toEqual(['Remember the codeword KIWI.', 'What was the codeword?', 'What was the codeword, again?']);
    expect(await prompts(after.provider.transcript.path)).toEqual(['Remember the codeword KIWI.', 'What was the codeword?', 'What was the codeword, again?']);
  });

  it('a shell tool turn lists the command and its output from the session file', async () => {
    const run = await suite.cal(['continue', handle, '--json', ...TIMEOUT, 'Run it [[cal:shell=echo hello-from-qwen]]']);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.json.turn.answer).toBe('Tool finished: hello-from-qwen');
    expect(run.json.turn.tools).toEqual([expect.objectContaining({ kind: 'shell', name: 'echo hello-from-qwen', output: 'hello-from-qwen', status: 'completed' })]);
  });

  it('a session file that is gone is resume_unavailable (9), never a fresh start', async () => {
    const view = await suite.inspect(handle);
    expect((await suite.cal(['kill-tmux', handle])).code).toBe(0);
    await fs.rename(view.provider.transcript.path, `${view.provider.transcript.path}.moved`);
    suite.server.clearLog();
    const run = await suite.cal(['continue', handle, '--json', ...TIMEOUT, 'Are you there?']);
    expect(run.json?.error?.kind, run.stdout).toBe('resume_unavailable');
    expect(run.code).toBe(9);
    expect(suite.server.turnRequests()).toHaveLength(0);
    expect(existsSync(view.provider.transcript.path)).toBe(false);
  });
});

describe.skipIf(nodeTooOld !== null)('Qwen Code structured (headless stream-json), end to end', () => {
  let suite: CliSuite;
  let handle = '';

  beforeAll(async () => {
    suite = await cliSuite('qwen', { prefix: 'qwen-structured' });
  });
  afterAll(async () => {
    await suite?.close();
  });

  it('starts, remembers and recalls through `qwen --resume`, one new user message per turn', async () => {
    const run = await suite.cal(['start', '--provider', 'qwen', '--transport', 'structured', '--cwd', suite.work, ...TIMEOUT, 'Remember the codeword PLUM.']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('OK, I will remember the codeword PLUM.');
    handle = handleFromStderr(run.stderr) ?? '';
    suite.server.clearLog();
    const next = await suite.cal(['continue', handle, '--json', ...TIMEOUT, 'What was the codeword?']);
    expect(next.code, next.stderr).toBe(0);
    expect(next.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was PLUM.' });
    const turns = suite.server.turnRequests();
    expect(turns).toHaveLength(1);
    expect(turns[0]!.userMessages).toEqual(['Remember the codeword PLUM.', 'What was the codeword?']);
    const view = await suite.inspect(handle);
    expect(view.provider.transport).toBe('structured');
    expect(view.provider.transcript.path).toBe(path.join(suite.configDir, 'projects', projectSlug(suite.work), 'chats', `${view.provider.nativeSessionId}.jsonl`));
  });

  it('a shell tool under the bypass policy lists the command (headless Qwen offers no shell tool in its default auto mode)', async () => {
    const run = await suite.cal(['start', '--provider', 'qwen', '--transport', 'structured', '--tool-policy', 'bypass', '--cwd', suite.work, '--json', ...TIMEOUT, 'Run it [[cal:shell=echo hi-structured]]']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn.answer).toBe('Tool finished: hi-structured');
    expect(run.json.turn.tools).toEqual([expect.objectContaining({ kind: 'shell', name: 'echo hi-structured', output: 'hi-structured', status: 'completed' })]);
  });
});
