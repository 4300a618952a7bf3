import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelServer } from '../../src/model/server.js';
import { handleFromStderr, type CalRun } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { cliBin, pinnedCli } from '../support/clis.js';

/**
 * Issue 5 acceptance: every error kind and exit code reached the way a user reaches it, the
 * lifecycle events in order, one continuation per handle, with the real Claude Code binary.
 */
describe('the continuation contract', () => {
  let suite: CliSuite;
  let server: ModelServer;
  let root: string;
  let state: string;

  const cal = (args: string[], input?: string): Promise<CalRun> => suite.cal(args, { input });
  const inspect = (h: string) => suite.inspect(h);
  async function startSession(message = 'Remember the codeword OSLO.', extra: string[] = [], cwd?: string): Promise<string> {
    const work = cwd ?? (await suite.workDir(`w-${Math.random().toString(36).slice(2, 8)}`));
    const run = await cal(['start', '--provider', 'claude-code', '--cwd', work, ...extra, message]);
    expect(run.stderr).toMatch(/handle: /);
    expect(run.code, run.stderr).toBe(0);
    return handleFromStderr(run.stderr)!;
  }

  beforeAll(async () => {
    suite = await cliSuite('claude-code', { prefix: 'contract' });
    ({ server, root, state } = suite);
  });

  afterAll(async () => {
    await suite?.close();
  });

  it('usage errors exit 2 with one line', async () => {
    const noProvider = await cal(['start', 'hello']);
    expect(noProvider.code).toBe(2);
    const badWait = await cal(['continue', 'abcdefgh', '--wait=soon', 'hello']);
    expect(badWait.code).toBe(2);
    expect(badWait.stderr.trim().split('\n')).toHaveLength(1);
    const path = await cal(['continue', '../../etc/passwd', 'hello', '--json']);
    expect(path.code).toBe(2);
    expect(path.json.error.kind).toBe('usage');
  });

  it('lifecycle events of the paste path and the lost-tmux path are logged in order', async () => {
    const h = await startSession();
    expect((await cal(['continue', h, 'What was the codeword?'])).code).toBe(0);
    await cal(['kill-tmux', h]);
    const resumed = await cal(['continue', h, 'What was the codeword?']);
    expect(resumed.stdout.trim()).toBe('The codeword was OSLO.');
    const events = (await cal(['events', h])).stdout.trim().split('\n').map((l) => JSON.parse(l).event);
    expect(events).toEqual([
      'running', 'completed', // start
      'running', 'completed', // paste into the live pane
      'pane_killed',
      'lost_tmux', 'resuming', 'running', 'completed', // native resume
    ]);
  });

  it('stale_handle (6) names the field: model, cwd, system prompt, MCP config, and a recreated or moved folder', async () => {
    const work = await suite.workDir('stale');
    const mcp = path.join(root, 'mcp.json');
    await fs.writeFile(mcp, JSON.stringify({ mcpServers: {} }));
    const h = await startSession('Remember the codeword RIGA.', ['--model', 'model-a', '--system-prompt', 'Be brief.', '--mcp-config', mcp], work);

    const model = await cal(['continue', h, '--model', 'model-b', '--json', 'hi']);
    expect(model.code).toBe(6);
    expect(model.json.error).toMatchObject({ kind: 'stale_handle', field: 'model', expected: 'model-a', actual: 'model-b' });
    const cwd = await cal(['continue', h, '--cwd', root, '--json', 'hi']);
    expect(cwd.json.error).toMatchObject({ kind: 'stale_handle', field: 'workingDir' });
    const prompt = await cal(['continue', h, '--system-prompt', 'Be verbose.', '--json', 'hi']);
    expect(prompt.json.error).toMatchObject({ kind: 'stale_handle', field: 'systemPrompt' });
    // The same folder through a symlink is the same folder.
    const link = path.join(root, 'stale-link');
    await fs.symlink(work, link);
    const same = await cal(['continue', h, '--cwd', link, '--model', 'model-a', 'What was the codeword?']);
    expect(same.code, same.stderr).toBe(0);
    expect(same.stdout.trim()).toBe('The codeword was RIGA.');

    await fs.writeFile(mcp, JSON.stringify({ mcpServers: { other: { command: 'true' } } }));
    const mcpChanged = await cal(['continue', h, '--json', 'hi']);
    expect(mcpChanged.json.error).toMatchObject({ kind: 'stale_handle', field: 'mcpConfig' });
    await fs.writeFile(mcp, JSON.stringify({ mcpServers: {} }));

    await fs.rm(work, { recursive: true });
    await fs.mkdir(work);
    const recreated = await cal(['continue', h, '--json', 'hi']);
    expect(recreated.code).toBe(6);
    expect(recreated.json.error).toMatchObject({ kind: 'stale_handle', field: 'workingDir' });
    await fs.rename(work, `${work}-moved`);
    const moved = await cal(['continue', h, '--json', 'hi']);
    expect(moved.json.error).toMatchObject({ kind: 'stale_handle', field: 'workingDir', actual: 'missing' });
    const events = (await cal(['events', h])).stdout;
    expect(events).toContain('"stale_handle"');
  });

  it('a bad --mcp-config is usage (2) before anything starts, for every CLI alike (issue 20)', async () => {
    const work = await suite.workDir('badmcp');
    const badMcp = path.join(root, 'bad-mcp.json');
    await fs.writeFile(badMcp, '{ this is not json');
    const notServers = path.join(root, 'not-servers.json');
    await fs.writeFile(notServers, JSON.stringify({ mcpServers: { probe: { args: ['x'] } } }));
    for (const [provider, file] of [['claude-code', badMcp], ['codex', badMcp], ['claude-code', notServers], ['pi', notServers]] as const) {
      const start = await cal(['start', '--provider', provider, '--cwd', work, '--mcp-config', file, '--json', 'hello']);
      expect(start.code, `${provider} ${file}: ${start.stdout}`).toBe(2);
      expect(start.json.error.kind).toBe('usage');
      expect(start.json.error.handle).toBeUndefined();
    }
  });

  it('non_continuable (7): the CLI exited before its first turn was recorded', async () => {
    const work = await suite.workDir('noncont');
    // A broken install: the CLI answers --version, then exits at once on every launch.
    const broken = path.join(root, 'broken-claude');
    await fs.writeFile(broken, `#!/bin/sh\nif [ "$1" = --version ]; then exec ${cliBin('claude')} --version; fi\necho "broken install" >&2\nexit 3\n`, { mode: 0o755 });
    const start = await cal(['start', '--provider', 'claude-code', '--cwd', work, '--cli-path', broken, '--json', 'hello']);
    expect(start.code).not.toBe(0);
    const h = start.json.error.handle;
    expect(h).toBeTruthy();
    const again = await cal(['continue', h, '--json', 'hello again']);
    expect(again.code).toBe(7);
    expect(again.json.error.kind).toBe('non_continuable');
  });

  it('non_applicable (8): an API session has no pane, while agent-level continue works', async () => {
    const apiEnv = { env: { ANTHROPIC_BASE_URL: server.url, ANTHROPIC_AUTH_TOKEN: 'x' } };
    const start = await suite.cal(['start', '--provider', 'anthropic', 'Remember the codeword LIMA.'], apiEnv);
    expect(start.code).toBe(0);
    const h = handleFromStderr(start.stderr)!;
    const kill = await suite.cal(['kill-tmux', h, '--json'], apiEnv);
    expect(kill.code).toBe(8);
    expect(kill.json.error.kind).toBe('non_applicable');
    // A handle keeps its transport: another one asked for is refused before anything is sent, saying why.
    const sent = server.turnRequests().length;
    const crossed = await suite.cal(['continue', h, '--transport', 'structured', 'What was the codeword?'], apiEnv);
    expect(crossed.code).toBe(8);
    expect(crossed.stderr.trim().split('\n')).toEqual([`handle: ${h}`, expect.stringMatching(/^cal: non_applicable: handle \S+ runs on the api transport, not structured: an API session is continued from cal's own stored history/)]);
    expect(server.turnRequests().length).toBe(sent);
    const recall = await suite.cal(['continue', h, '--transport', 'api', 'What was the codeword?'], apiEnv);
    expect(recall.stdout.trim()).toBe('The codeword was LIMA.');
    const last = server.turnRequests().at(-1)!;
    expect(last.dialect).toBe('anthropic');
    expect(last.userMessages).toEqual(['Remember the codeword LIMA.', 'What was the codeword?']);
  });

  it('resume_unavailable (9): the CLI refuses to resume a session whose transcript was deleted, with its own message', async () => {
    const h = await startSession();
    const view = await inspect(h);
    await cal(['kill-tmux', h]);
    await fs.rm(view.provider.transcript.path);
    const run = await cal(['continue', h, '--json', 'What was the codeword?']);
    expect(run.code).toBe(9);
    expect(run.json.error.kind).toBe('resume_unavailable');
    expect(run.json.error.message).toMatch(/No conversation found/);
  });

  it('interrupted (11): Escape in the pane while the answer streams', async () => {
    const h = await startSession();
    const view = await inspect(h);
    // Escape before the first streamed byte makes Claude Code 2.1.328 write nothing at all, so
    // the scripted answer streams slowly and Escape comes mid-stream.
    const slow = cal(['continue', h, '--json', 'Take your time [[cal:chunks=12]][[cal:chunk-delay=700]][[cal:lines=12]]']);
    await waitForTurnStatus(h, 'running');
    await new Promise((r) => setTimeout(r, 2500));
    await execa('tmux', ['-S', view.provider.tmux.socket, 'send-keys', '-t', view.provider.tmux.paneId, 'Escape']);
    const run = await slow;
    expect(run.code).toBe(11);
    expect(run.json.turn.status).toBe('interrupted');
  });

  it('lost (12): the pane is killed mid-turn; the next continue resumes natively', async () => {
    const h = await startSession('Remember the codeword TOKYO.');
    const slow = cal(['continue', h, '--json', 'Take your time [[cal:delay=8000]]']);
    await waitForTurnStatus(h, 'running');
    await cal(['kill-tmux', h]);
    const run = await slow;
    expect(run.code).toBe(12);
    expect(run.json.turn.status).toBe('lost');
    const next = await cal(['continue', h, 'What was the codeword?']);
    expect(next.code).toBe(0);
    expect(next.stdout.trim()).toBe('The codeword was TOKYO.');
  });

  it('cli_missing (13): no such executable, and a pinned executable that is gone', async () => {
    const work = await suite.workDir('missing');
    const none = await cal(['start', '--provider', 'claude-code', '--cwd', work, '--cli-path', path.join(root, 'no-such-claude'), '--json', 'hi']);
    expect(none.code).toBe(13);
    expect(none.json.error.kind).toBe('cli_missing');

    const copy = path.join(root, 'claude-copy');
    await fs.copyFile(await fs.realpath(cliBin('claude')), copy);
    await fs.chmod(copy, 0o755);
    const h = await startSession('Remember the codeword PERTH.', ['--cli-path', copy]);
    await cal(['kill-tmux', h]);
    await fs.rm(copy);
    const gone = await cal(['continue', h, '--json', 'What was the codeword?']);
    expect(gone.code).toBe(13);
    expect(gone.json.error.message).toContain(pinnedCli.claude.version);
  });

  it('timeout (14): a hung turn ends the wait with the timeout error and a consistent turn record', async () => {
    const h = await startSession();
    const run = await cal(['continue', h, '--timeout', '2', '--json', 'Hang [[cal:delay=7000]]']);
    expect(run.code).toBe(14);
    expect(run.json.error.kind).toBe('timeout');
    const turns = (await inspect(h)).turns;
    expect(turns.at(-1).status).toBe('running');
    expect(turns.at(-1).error.kind).toBe('timeout');
  });

  it('a message sent again with the same text after a timed-out turn is matched to its own turn', async () => {
    const h = await startSession('Remember the codeword LISBON.');
    const message = 'Once more, what was the codeword? [[cal:delay=3000]]';
    const first = await cal(['continue', h, '--timeout', '2', '--json', message]);
    expect(first.code).toBe(14);
    // The CLI still works on the timed-out turn, so the handle is held until that turn ends
    // (issue 20): --wait queues behind it, and the timed-out turn is settled with its own answer.
    const second = await cal(['continue', h, '--wait=60', '--json', message]);
    expect(second.code, second.stdout).toBe(0);
    expect(second.json.turn.answer).toBe('The codeword was LISBON.');
    const turns = (await inspect(h)).turns.filter((t: any) => t.message === message);
    expect(turns).toHaveLength(2);
    expect(turns[0]).toMatchObject({ status: 'completed', answer: 'The codeword was LISBON.' });
    expect(turns[1].turnKey).not.toBe(turns[0].turnKey);
  });

  it('one continuation per handle: without --wait 9 of 10 get busy (5); with --wait all run in arrival order', async () => {
    const h = await startSession();
    // The holder's turn outlasts the rivals' start-up even on a loaded machine.
    const holder = cal(['continue', h, 'Slow one [[cal:delay=10000]]']);
    await waitForTurnStatus(h, 'running');
    const rivals = await Promise.all(Array.from({ length: 9 }, (_, i) => cal(['continue', h, '--json', `rival ${i}`])));
    expect(rivals.map((r) => r.code)).toEqual(Array(9).fill(5));
    expect(rivals.every((r) => r.json.error.kind === 'busy')).toBe(true);
    expect((await holder).code).toBe(0);

    server.clearLog();
    // Arrival order is the order in which callers joined the line: each waiter is launched once
    // the one before it is seen waiting, while a slow turn holds the handle.
    // Long enough for ten cal processes to start one after another on a loaded machine.
    const slowHolder = cal(['continue', h, 'Slow holder [[cal:delay=8000]]']);
    await waitForTurnStatus(h, 'running');
    const waiters: Promise<CalRun>[] = [];
    for (let i = 0; i < 10; i++) {
      waiters.push(cal(['continue', h, '--wait', '--json', `queued message ${i}`]));
      await waitForEventCount(h, 'waiting_for_lock', i + 1);
    }
    expect((await slowHolder).code).toBe(0);
    const results = await Promise.all(waiters);
    expect(results.map((r) => r.code)).toEqual(Array(10).fill(0));
    const order = server.turnRequests().map((r) => r.lastUserMessage ?? '').filter((m) => m.startsWith('queued message'));
    expect(order).toEqual(Array.from({ length: 10 }, (_, i) => `queued message ${i}`));
  });

  it('a continuation holder killed with SIGKILL: the next caller gets the lock at once', async () => {
    const h = await startSession('Remember the codeword BERN.');
    const { child } = suite.spawnCal(['continue', h, 'Slow one [[cal:delay=2500]]']);
    await waitForTurnStatus(h, 'running');
    child.kill('SIGKILL');
    await new Promise((r) => child.on('exit', r));
    // The dead holder's lock is taken at once; the CLI still works on its turn, so the caller
    // is busy until that turn ends (issue 20), and --wait follows it to its end first.
    const busy = await cal(['continue', h, '--json', 'What was the codeword?']);
    expect(busy.json.error.kind).toBe('busy');
    expect(busy.json.error.message).toMatch(/still working on turn/);
    const next = await cal(['continue', h, '--wait=60', '--json', 'What was the codeword?']);
    expect(next.code, JSON.stringify(next.json)).toBe(0);
    expect(next.json.turn.answer).toBe('The codeword was BERN.');
    const killed = (await inspect(h)).turns.find((t: any) => t.message.startsWith('Slow one'));
    expect(killed.status).toBe('completed');
  });

  async function waitForEventCount(h: string, event: string, count: number): Promise<void> {
    for (let i = 0; i < 200; i++) {
      const text = await fs.readFile(path.join(state, 'handles', `${h}.events.jsonl`), 'utf8').catch(() => '');
      if (text.split('\n').filter((l) => l.includes(`"event":"${event}"`)).length >= count) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`never saw ${count} ${event} events`);
  }

  async function waitForTurnStatus(h: string, status: string): Promise<void> {
    const dir = path.join(state, 'turns', h);
    for (let i = 0; i < 200; i++) {
      const files = (await fs.readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.json')).sort();
      const last = files.at(-1);
      if (last) {
        const turn = JSON.parse(await fs.readFile(path.join(dir, last), 'utf8').catch(() => '{}'));
        if (turn.status === status) return;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`turn never reached ${status}`);
  }
});
