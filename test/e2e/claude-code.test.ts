import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelServer } from '../../src/model/server.js';
import { handleFromStderr } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { pinnedCli } from '../support/clis.js';

/**
 * Issue 3 acceptance: the real pinned `claude` binary in real tmux against the scripted model.
 * The tests in this file build on each other (one logical session), so they run in order.
 */
describe('Claude Code in tmux, end to end', () => {
  let suite: CliSuite;
  let server: ModelServer;
  let state: string;
  let work: string;
  let handle = '';

  const cal = (args: string[], input?: string) => suite.cal(args, { input });
  const inspect = () => suite.inspect(handle);

  beforeAll(async () => {
    suite = await cliSuite('claude-code', { prefix: 'claude-e2e' });
    ({ server, state, work } = suite);
  });

  afterAll(async () => {
    await suite.close();
  });

  it('start prints the answer, and the handle holds the native id, pane, CLI version and offset', async () => {
    const run = await cal(['start', '--provider', 'claude-code', '--cwd', work, 'Remember the codeword TANGO.']);
    expect(run.stderr).toMatch(/^handle: [a-z0-9]+$/m);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe('OK, I will remember the codeword TANGO.');
    handle = handleFromStderr(run.stderr) ?? '';
    const view = await inspect();
    expect(view.provider.nativeSessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(view.provider.tmux.paneId).toMatch(/^%\d+$/);
    expect(view.currentPaneAlive).toBe(true);
    expect(view.provider.cli.version).toBe(pinnedCli.claude.version);
    expect(view.provider.cli.realPath).toMatch(/claude\.exe$/);
    expect(view.provider.transcript.offset).toBeGreaterThan(0);
    const size = (await fs.stat(view.provider.transcript.path)).size;
    expect(view.provider.transcript.offset).toBeLessThanOrEqual(size);
    // Only the trust entry of the exact cwd (and, in this cal-managed HOME, onboarding) was written.
    const claudeJson = JSON.parse(await fs.readFile(path.join(suite.home, '.claude.json'), 'utf8'));
    expect(claudeJson.projects[await fs.realpath(work)].hasTrustDialogAccepted).toBe(true);
  });

  it('continue with the pane alive pastes into it (no relaunch) and recalls', async () => {
    const before = await inspect();
    server.clearLog();
    const run = await cal(['continue', handle, '--json', '--events', 'What was the codeword?']);
    expect(run.code).toBe(0);
    expect(run.json.turn.answer).toBe('The codeword was TANGO.');
    expect(run.json.turn.status).toBe('completed');
    const events = run.stderr.split('\n').filter(Boolean).map((l) => JSON.parse(l).event);
    expect(events).toEqual(['running', 'completed']);
    const after = await inspect();
    expect(after.panes).toHaveLength(1);
    expect(after.provider.tmux.paneId).toBe(before.provider.tmux.paneId);
    expect(after.provider.transcript.offset).toBeGreaterThan(before.provider.transcript.offset);
    // The second end-of-turn signal still comes with the hook in the background (async, 2.1.328
    // on): cal's Stop hook appends this turn's Stop, named by its prompt id, to the signal file.
    const signals = after.provider.signals.path as string;
    const stopOfTurn = async () =>
      (await fs.readFile(signals, 'utf8').catch(() => ''))
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
        .some((p) => p.hook_event_name === 'Stop' && p.prompt_id === run.json.turn.turnKey);
    for (let i = 0; i < 100 && !(await stopOfTurn()); i++) await new Promise((r) => setTimeout(r, 50));
    expect(await stopOfTurn(), 'a Stop signal for the pasted turn').toBe(true);
  });

  it('after kill-tmux, continue reports lost_tmux and resuming, resumes natively and recalls', async () => {
    const before = await inspect();
    const kill = await cal(['kill-tmux', handle]);
    expect(kill.code).toBe(0);
    server.clearLog();
    const run = await cal(['continue', handle, '--json', '--events', 'What was the codeword, again?']);
    expect(run.code).toBe(0);
    expect(run.json.turn.answer).toBe('The codeword was TANGO.');
    const events = run.stderr.split('\n').filter(Boolean).map((l) => JSON.parse(l).event);
    expect(events).toEqual(['lost_tmux', 'resuming', 'running', 'completed']);

    const after = await inspect();
    expect(after.panes).toHaveLength(2);
    expect(after.panes[0].endedAt).toBeNull();
    expect(after.panes[0].launch).toBe('resume');
    expect(after.panes[1].tmux.paneId).toBe(before.provider.tmux.paneId);
    expect(after.panes[1].endedAt).not.toBeNull();
    expect(after.provider.nativeSessionId).toBe(before.provider.nativeSessionId);
    expect(after.provider.transcript.path).toBe(before.provider.transcript.path);

    // The resumed request carried each earlier turn once and exactly one new message.
    const turns = server.turnRequests();
    const last = turns.at(-1)!;
    expect(last.userMessages.filter((m) => m.includes('Remember the codeword TANGO.'))).toHaveLength(1);
    expect(last.userMessages.filter((m) => m.includes('What was the codeword?'))).toHaveLength(1);
    expect(last.userMessages.filter((m) => m.includes('What was the codeword, again?'))).toHaveLength(1);
    expect(last.userMessages).toHaveLength(3);
    expect(last.lastUserMessage).toContain('What was the codeword, again?');
  });

  it('a 5 KB multi-line message with quotes, $(...), backticks, tabs and non-ASCII reaches the CLI intact', async () => {
    const line = (i: number) => `line ${i}: "double" 'single' $(touch /tmp/cal-pwned-${i}) \`uname\` \ttab ünïcødé ✓ 日本語 $HOME \\n`;
    let message = '';
    for (let i = 0; message.length < 5000; i++) message += line(i) + '\n';
    message = `[[cal:echo]]\n${message.trimEnd()}`;
    const run = await cal(['continue', handle, '--json', '-'], message);
    expect(run.code).toBe(0);
    const view = await inspect();
    const transcript = await fs.readFile(view.provider.transcript.path, 'utf8');
    const userTexts = transcript
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((r) => r.type === 'user' && typeof r.message?.content === 'string')
      .map((r) => r.message.content as string);
    // Byte for byte, except that Claude Code's input box turns each tab into four spaces.
    const asStored = message.replace(/\t/g, '    ');
    expect(userTexts.some((t) => t.includes(asStored))).toBe(true);
    expect(server.turnRequests().at(-1)!.lastUserMessage).toContain(asStored.replace('[[cal:echo]]\n', ''));
    expect(run.json.turn.answer).toContain(asStored.replace('[[cal:echo]]\n', ''));
    await expect(fs.stat('/tmp/cal-pwned-0')).rejects.toThrow();
  });

  it('a scripted HTTP 500 (retries off) is turn_failed with the CLI error text, exit 10, no empty answer', async () => {
    const run = await cal(['continue', handle, '--json', 'This one fails [[cal:http=500]]']);
    expect(run.code).toBe(10);
    expect(run.json.turn.status).toBe('failed');
    expect(run.json.turn.answer).toBeNull();
    expect(run.json.error.kind).toBe('turn_failed');
    expect(run.json.error.message).toMatch(/API Error: 500/);
    const plain = await cal(['continue', handle, 'Fails again [[cal:http=500]]']);
    expect(plain.code).toBe(10);
    expect(plain.stdout).toBe('');
    expect(plain.stderr).toMatch(/turn_failed: .*500/);
    // The session still works after failures.
    const ok = await cal(['continue', handle, 'What was the codeword?']);
    expect(ok.code).toBe(0);
    expect(ok.stdout.trim()).toBe('The codeword was TANGO.');
  });

  it('a message starting with "!" is text for the model; one starting with "/" is refused, never run as a slash command', async () => {
    const marker = path.join(work, 'claude-bang-ran');
    const bang = await cal(['continue', handle, '--json', `!touch ${marker}`]);
    expect(bang.code, bang.stdout).toBe(0);
    await expect(fs.stat(marker)).rejects.toThrow();
    expect(server.turnRequests().at(-1)!.lastUserMessage).toContain(`!touch ${marker}`);
    const turnsBefore = (await inspect()).turns.length;
    for (const message of ['/exit', ' /exit', '\u2060/exit']) {
      const slash = await cal(['continue', handle, '--json', message]);
      expect(slash.code).toBe(2);
      expect(slash.json.error).toMatchObject({ kind: 'usage', message: expect.stringContaining('slash command') });
    }
    const after = await inspect();
    expect(after.currentPaneAlive).toBe(true);
    expect(after.turns).toHaveLength(turnsBefore);
  });

  it('an unknown handle is not_found (3); a corrupt handle file is invalid_handle (4) and left untouched', async () => {
    const unknown = await cal(['continue', 'zzzzzzzzzz', 'hello']);
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toMatch(/not_found/);
    const unknownJson = await cal(['continue', 'zzzzzzzzzz', '--json', 'hello']);
    expect(unknownJson.json.error.kind).toBe('not_found');

    const file = path.join(state, 'handles', 'corrupt0001.json');
    const garbage = '{"schemaVersion": 1, "id": "corrupt0001", "provider": trunc';
    await fs.writeFile(file, garbage, { mode: 0o600 });
    const corrupt = await cal(['continue', 'corrupt0001', 'hello']);
    expect(corrupt.code).toBe(4);
    expect(corrupt.stderr.trim().split('\n').at(-1)).toMatch(/^cal: invalid_handle: .*corrupt/);
    expect(await fs.readFile(file, 'utf8')).toBe(garbage);
  });
});
