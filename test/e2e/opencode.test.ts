import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRow, userText } from '../../src/adapters/opencode/turn.js';
import { eventsOf, handleFromStderr } from '../support/cal.js';
import { cliSuite, pinnedVersion, type CliSuite } from '../support/cli-suite.js';

/**
 * OpenCode acceptance: the real pinned binary (1.18.33) against the scripted model, driven
 * through the built `cal` as a black box, in tmux and through `opencode run --format json`. The
 * tests of each transport build on each other (one logical session), so they run in order.
 */
const TIMEOUT = ['--timeout', '120'];

/** The user prompts of a session, from cal's mirror of OpenCode's store (latest version of each row). */
async function prompts(mirror: string): Promise<string[]> {
  const rows = (await fs.readFile(mirror, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .flatMap((l) => {
      const parsed = parseRow(JSON.parse(l));
      return parsed ? [parsed] : [];
    });
  const latest = new Map(rows.map((r) => [r.row.id, r]));
  const users = [...latest.values()].filter((r) => r.message?.role === 'user').map((r) => r.row.id);
  return users.map((id) => userText([...latest.values()].filter((r) => r.part && r.row.messageId === id).map((r) => r.part!)));
}

describe('OpenCode in tmux, end to end', () => {
  let suite: CliSuite;
  let handle = '';

  beforeAll(async () => {
    suite = await cliSuite('opencode', { prefix: 'opencode-e2e' });
  });
  afterAll(async () => {
    await suite?.close();
  });

  it("starts and remembers: the handle binds OpenCode's own session (ses_…) from its store", async () => {
    const run = await suite.cal(['start', '--provider', 'opencode', '--cwd', suite.work, ...TIMEOUT, 'Remember the codeword KIWI.']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('OK, I will remember the codeword KIWI.');
    handle = handleFromStderr(run.stderr) ?? '';
    const view = await suite.inspect(handle);
    expect(view.provider.nativeSessionId).toMatch(/^ses_[A-Za-z0-9]+$/);
    expect(view.provider.cli.version).toBe(pinnedVersion('opencode'));
    expect(view.currentPaneAlive).toBe(true);
    expect(view.provider.transcript.path).toBe(path.join(suite.configDir, 'cal-transcripts', `${view.provider.nativeSessionId}.jsonl`));
    expect(await prompts(view.provider.transcript.path)).toEqual(['Remember the codeword KIWI.']);
  });

  it('continue with the pane alive pastes into it and recalls; the title request is no user turn', async () => {
    suite.server.clearLog();
    const run = await suite.cal(['continue', handle, '--json', '--events', ...TIMEOUT, 'What was the codeword?']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was KIWI.' });
    expect(eventsOf(run)).toEqual(['running', 'completed']);
    const turns = suite.server.turnRequests();
    expect(turns).toHaveLength(1);
    expect(turns[0]!.userMessages).toEqual(['Remember the codeword KIWI.', 'What was the codeword?']);
  });

  it('after kill-tmux, continue resumes natively (opencode --session): the model log shows one new user message, the same session', async () => {
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

  it('a shell tool turn lists the command and its output from the store', async () => {
    const run = await suite.cal(['continue', handle, '--json', ...TIMEOUT, 'Run it [[cal:shell=echo hello-from-opencode]]']);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.json.turn.answer).toBe('Tool finished: hello-from-opencode');
    expect(run.json.turn.tools).toEqual([expect.objectContaining({ kind: 'shell', name: 'echo hello-from-opencode', output: expect.stringContaining('hello-from-opencode'), status: 'completed' })]);
  });

  it('two starts at once in one folder with the same message each bind the session cal chose for it, and each recalls only its own', async () => {
    const first = 'Two at once, same words.';
    const starts = await Promise.all([0, 1].map(() => suite.cal(['start', '--provider', 'opencode', '--cwd', suite.work, ...TIMEOUT, first])));
    for (const r of starts) expect(r.code, r.stderr).toBe(0);
    const handles = starts.map((r) => handleFromStderr(r.stderr) ?? '');
    const views = await Promise.all(handles.map((h) => suite.inspect(h)));
    const ids = views.map((v) => v.provider.nativeSessionId);
    expect(ids[0]).toMatch(/^ses_[0-9a-f]{12}[0-9A-Za-z]{14}$/);
    expect(ids[1]).toMatch(/^ses_[0-9a-f]{12}[0-9A-Za-z]{14}$/);
    expect(ids[0]).not.toBe(ids[1]);
    for (const v of views) expect(await prompts(v.provider.transcript.path)).toEqual([first]);
    const codes = ['ALPHA', 'BRAVO'];
    await Promise.all(handles.map(async (h, i) => expect((await suite.cal(['continue', h, ...TIMEOUT, `Remember the codeword ${codes[i]}.`])).code).toBe(0)));
    const recalls = await Promise.all(handles.map((h) => suite.cal(['continue', h, '--json', ...TIMEOUT, 'What was the codeword?'])));
    expect(recalls.map((r) => r.json.turn.answer)).toEqual(['The codeword was ALPHA.', 'The codeword was BRAVO.']);
  });
});

describe('OpenCode structured (opencode run --format json), end to end', () => {
  let suite: CliSuite;
  let handle = '';

  beforeAll(async () => {
    suite = await cliSuite('opencode', { prefix: 'opencode-structured' });
  });
  afterAll(async () => {
    await suite?.close();
  });

  it('starts, remembers and recalls through `opencode run --session`, one new user message per turn, the text byte for byte', async () => {
    const run = await suite.cal(['start', '--provider', 'opencode', '--transport', 'structured', '--cwd', suite.work, ...TIMEOUT, 'Remember the codeword PLUM.']);
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
    expect(view.provider.nativeSessionId).toMatch(/^ses_[A-Za-z0-9]+$/);
  });
});
