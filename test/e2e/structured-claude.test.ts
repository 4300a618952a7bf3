import { spawn, type ChildProcess } from 'node:child_process';
import { realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowProbeToolInProject } from '../../src/certify/fixtures.js';
import { mcpProbeSource } from '../../src/certify/mcp-probe.js';
import { startRecordingProxy } from '../../src/certify/recording-proxy.js';
import type { ModelServer } from '../../src/model/server.js';
import { eventsOf, handleFromStderr, runCal } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { calBin, pinnedCli } from '../support/clis.js';
import { busyWhileStructuredTurnRuns, chainedStructuredTurns } from '../support/structured-busy.js';
import { lastCliExited as lastCliExitedOf, traceMarks, unusedReasons } from '../support/early-start.js';

/**
 * Issue 15 acceptance for Claude Code: `--transport structured` drives the real pinned `claude`
 * in print mode (`-p --output-format stream-json`, one process per turn, `--session-id` then
 * `--resume`) against the scripted model. No pane anywhere. The tests build on one session and
 * run in order.
 */
const TIMEOUT = ['--timeout', '90'];

describe('Claude Code with --transport structured, end to end', () => {
  let suite: CliSuite;
  let server: ModelServer;
  let work: string;
  let handle = '';
  const m1 = 'Remember the codeword QUINCE.';
  const m2 = 'What was the codeword?';

  const cal = (args: string[], input?: string) => suite.cal(args, input === undefined ? {} : { input });
  const inspect = async (h = handle) => (await cal(['inspect', h, '--json'])).json;
  const userMessagesOfLastTurn = () => server.turnRequests().at(-1)?.userMessages ?? [];
  const lastCliExited = () => lastCliExitedOf(inspect);

  beforeAll(async () => {
    suite = await cliSuite('claude-code', { prefix: 'structured-claude' });
    server = suite.server;
    work = realpathSync(suite.work);
  });

  afterAll(async () => {
    await suite?.close();
  });

  it('start answers through claude -p; the handle has the id it chose up front, the transcript, no pane', async () => {
    const run = await cal(['start', '--provider', 'claude-code', '--transport', 'structured', '--cwd', work, ...TIMEOUT, m1]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('OK, I will remember the codeword QUINCE.');
    handle = handleFromStderr(run.stderr) ?? '';
    const view = await inspect();
    expect(view.provider).toMatchObject({ transport: 'structured', tmux: null, pendingSessionId: null, status: 'idle' });
    expect(view.panes).toEqual([]);
    expect(view.provider.cli.version).toBe(pinnedCli.claude.version);
    const id = view.provider.nativeSessionId as string;
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // The id is the one the handle chose (the model saw it as Claude's session id) …
    expect(server.turnRequests().map((r) => r.sessionKey)).toEqual([id]);
    // … and the transcript is Claude's own, where inspect and the observers read it.
    expect(view.provider.transcript.path).toBe(path.join(suite.env.HOME!, '.claude', 'projects', work.replace(/[^A-Za-z0-9]/g, '-'), `${id}.jsonl`));
    const records = (await fs.readFile(view.provider.transcript.path, 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l));
    // The prompt went in as one stream-json user line: Claude stores it as that one text block.
    expect(records.filter((r) => r.type === 'user').map((r) => r.message.content)).toEqual([[{ type: 'text', text: m1 }]]);
  });

  it('continue resumes the same session with only the new message and recalls', async () => {
    server.clearLog();
    await lastCliExited();
    const trace = path.join(suite.root, 'first-continue-trace');
    const run = await suite.cal(['continue', handle, '--json', '--events', ...TIMEOUT, m2], { env: { CAL_TRACE_TIMING: trace } });
    expect(run.code, run.stderr).toBe(0);
    // Already the first continue after start runs the claude -p cal's entry started (the start
    // answered Claude's config again after the CLI's first run: nothing left to write now).
    const { lines, marks } = await traceMarks(trace);
    expect(marks.filter((m) => m === 'structured-spawned'), unusedReasons(lines)).toHaveLength(1);
    expect(marks.indexOf('structured-spawned')).toBeLessThan(marks.indexOf('main'));
    expect(run.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was QUINCE.' });
    expect(eventsOf(run)).toEqual(['resuming', 'running', 'completed']);
    const turns = server.turnRequests();
    expect(turns).toHaveLength(1);
    expect(turns[0]!.userMessages).toEqual([m1, m2]);
    expect((await inspect()).panes).toEqual([]);
  });

  it('continued with --transport tmux: non_applicable (8), saying why, and nothing reaches the model', async () => {
    server.clearLog();
    const turnsBefore = (await inspect()).turns.length;
    const run = await cal(['continue', handle, '--transport', 'tmux', '--json', ...TIMEOUT, m2]);
    expect(run.code).toBe(8);
    expect(run.json.error).toMatchObject({ kind: 'non_applicable', field: 'transport', expected: 'structured', actual: 'tmux', handle });
    expect(run.json.error.message).toMatch(/runs on the structured transport, not tmux: a handle keeps the transport it was started with/);
    expect(server.turnRequests()).toHaveLength(0);
    expect((await inspect()).turns).toHaveLength(turnsBefore);
  });

  it('a 200 KB message goes on stdin and reaches the model whole, once', async () => {
    const big = `Big one [[cal:reply=BIG-OK]]\n${'0123456789abcdef'.repeat(12_800)}`;
    server.clearLog();
    const run = await cal(['continue', handle, '--json', ...TIMEOUT, '-'], big);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn.answer).toBe('BIG-OK');
    const seen = userMessagesOfLastTurn();
    expect(seen).toHaveLength(3);
    expect(seen[2]).toBe(big);
  });

  // After the 200 KB test, which counts the session's messages.
  it('turns chained back to back (each cal returns on the result, its claude -p may still be finishing): every resume carries each earlier turn once and one new message', async () => {
    await chainedStructuredTurns({ cal, inspect, server, handle, timeout: TIMEOUT }, 'claude -p');
  });

  it('a message starting with "/" reaches the model as text instead of running a slash command', async () => {
    server.clearLog();
    const run = await cal(['continue', handle, '--json', ...TIMEOUT, '/exit now']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn.answer).toBe('Received: /exit now');
    expect(server.turnRequests()).toHaveLength(1);
  });

  it('a persistent HTTP 500 is exit 10 with the CLI\'s error text; the session goes on, the failed prompt sent once', async () => {
    const failing = 'This one fails [[cal:http=500]]';
    server.clearLog();
    const run = await cal(['continue', handle, '--json', ...TIMEOUT, failing]);
    expect(run.code).toBe(10);
    expect(run.json.turn).toMatchObject({ status: 'failed', answer: null });
    expect(run.json.error.kind).toBe('turn_failed');
    expect(run.json.error.message).toContain('API Error: 500 Mock internal server error');
    expect(server.turnRequests().filter((r) => r.lastUserMessage === failing)).toHaveLength(1);

    server.clearLog();
    const next = await cal(['continue', handle, '--json', ...TIMEOUT, 'What was the codeword, after the failure?']);
    expect(next.code, next.stderr).toBe(0);
    expect(next.json.turn.answer).toBe('The codeword was QUINCE.');
    const seen = userMessagesOfLastTurn();
    expect(seen.filter((m) => m === m1)).toHaveLength(1);
    // Claude folds the failed prompt (with a newline) into the next request: still once.
    expect(seen.filter((m) => m.trim() === failing)).toHaveLength(1);
    expect(seen.at(-1)).toBe('What was the codeword, after the failure?');
  });

  it('claude -p retrying a failing model request: each retry is a `retrying` event (attempt, of, delay, status) while the turn runs', async () => {
    // The scripted env turns Claude's retries off; a user's claude retries (10 by default). The
    // `retryable` directive makes the 500 invite a retry (x-should-retry: true).
    const failing = 'This one is retried [[cal:http=500]][[cal:retryable]]';
    server.clearLog();
    const run = await suite.cal(['continue', handle, '--json', '--events', ...TIMEOUT, failing], { env: { CLAUDE_CODE_MAX_RETRIES: '2' } });
    expect(run.code, run.stderr).toBe(10);
    const retries = run.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
      .filter((e) => e.event === 'retrying');
    expect(retries.map((e) => e.detail)).toEqual([
      { attempt: 1, maxRetries: 2, delayMs: expect.any(Number), errorStatus: 500 },
      { attempt: 2, maxRetries: 2, delayMs: expect.any(Number), errorStatus: 500 },
    ]);
    expect(retries.every((e) => e.turn === run.json.turn.id)).toBe(true);
    // The CLI's own retries: one request and two more, all of the one message.
    expect(server.turnRequests().filter((r) => r.lastUserMessage === failing)).toHaveLength(3);
  });

  it('--stream prints the tool call and its result while the turn runs, then the text', async () => {
    const lines: any[] = [];
    let statusAtFirstTool: string | null = null;
    const child: ChildProcess = spawn('node', [calBin, '--state-dir', suite.state, 'continue', handle, '--stream', '--json', ...TIMEOUT, 'Run it [[cal:shell=echo STREAMED-OUT]]'], {
      env: suite.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const readTurns = async () => {
      const dir = path.join(suite.state, 'turns', handle);
      const files = (await fs.readdir(dir)).filter((f) => f.endsWith('.json')).sort();
      return JSON.parse(await fs.readFile(path.join(dir, files.at(-1)!), 'utf8'));
    };
    const pending: Promise<void>[] = [];
    createInterface({ input: child.stdout! }).on('line', (text) => {
      const value = JSON.parse(text);
      lines.push(value);
      if (value.type === 'tool' && statusAtFirstTool === null) {
        statusAtFirstTool = 'reading';
        pending.push(readTurns().then((t) => void (statusAtFirstTool = t.status)));
      }
    });
    const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? -1)));
    await Promise.all(pending);
    expect(code).toBe(0);
    // The first tool line was printed before the turn record said the turn had ended.
    expect(statusAtFirstTool).not.toBe('completed');
    const tools = lines.filter((l) => l.type === 'tool');
    expect(tools).toEqual([
      { type: 'tool', phase: 'call', kind: 'shell', name: 'echo STREAMED-OUT', input: { command: 'echo STREAMED-OUT', description: 'Run: echo STREAMED-OUT' } },
      { type: 'tool', phase: 'result', kind: 'shell', name: 'echo STREAMED-OUT', status: 'completed', output: 'STREAMED-OUT' },
    ]);
    // The text streams as deltas (--include-partial-messages): its pieces join to the answer.
    expect(lines.filter((l) => l.type === 'text').map((l) => l.text).join('')).toBe('Tool finished: STREAMED-OUT');
    expect(lines.at(-1).turn).toMatchObject({ status: 'completed', answer: 'Tool finished: STREAMED-OUT' });
    expect(lines.at(-1).turn.tools).toEqual([{ kind: 'shell', name: 'echo STREAMED-OUT', input: { command: 'echo STREAMED-OUT', description: 'Run: echo STREAMED-OUT' }, output: 'STREAMED-OUT', status: 'completed' }]);

    // Plain output: the text once on stdout, the tool lines on stderr.
    const plain = await cal(['continue', handle, '--stream', ...TIMEOUT, 'Again [[cal:shell=echo PLAIN-OUT]]']);
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout.trim()).toBe('Tool finished: PLAIN-OUT');
    expect(plain.stderr).toMatch(/^tool: shell echo PLAIN-OUT \(running\)$/m);
    expect(plain.stderr).toMatch(/^tool: shell echo PLAIN-OUT → completed: PLAIN-OUT$/m);
  });

  // A resumed structured turn starts its claude -p before taking the handle's lock, so both the
  // busy caller and the one waiting in line have a claude -p of the session running beside the
  // slow turn's: neither may put a message into the session but its own, once, in order.
  it('a continue while a structured turn runs: busy (5) at once, never sent; with --wait it waits in line and runs as its own turn', async () => {
    await busyWhileStructuredTurnRuns({ cal, inspect, server, handle, codeword: 'QUINCE', timeout: TIMEOUT });
  });

  // src/sessions/early-start.ts: the next resume's launch is recorded after each turn, and cal's
  // entry starts it before the command line loads. Timing marks show the order (CAL_TRACE_TIMING).
  it("continue's claude -p is started by cal's entry, before its modules load, when the recorded launch is the one the turn makes; otherwise it is killed unsent", async () => {
    const record = path.join(suite.state, 'homes', handle, 'next-launch.json');
    const recorded = JSON.parse(await fs.readFile(record, 'utf8'));
    expect((await fs.stat(record)).mode & 0o777).toBe(0o600);
    expect(recorded.argv).toEqual(expect.arrayContaining(['-p', '--resume', (await inspect()).provider.nativeSessionId]));
    // Only what the adapter set: none of the caller's own values.
    for (const [name, value] of Object.entries(recorded.set)) expect(suite.env[name], name).not.toBe(value);
    const traced = async (n: number, env: Record<string, string> = {}) => {
      const trace = path.join(suite.root, `early-trace-${n}`);
      const message = `What was the codeword? (early ${n})`;
      server.clearLog();
      await lastCliExited();
      const run = await suite.cal(['continue', handle, '--json', ...TIMEOUT, message], { env: { CAL_TRACE_TIMING: trace, ...env } });
      expect(run.code, run.stderr).toBe(0);
      expect(run.json.turn.answer).toBe('The codeword was QUINCE.');
      // The message reached the model once, with the session's earlier turns.
      expect(server.turnRequests()).toHaveLength(1);
      expect(server.turnRequests()[0]!.userMessages.filter((m) => m === message)).toHaveLength(1);
      expect(server.turnRequests()[0]!.userMessages[0]).toBe(m1);
      return (await traceMarks(trace)).marks;
    };
    // The recorded launch: started before main, and the only claude -p of the turn.
    const used = await traced(1);
    expect(used.filter((m) => m === 'structured-spawned')).toHaveLength(1);
    expect(used.indexOf('structured-spawned')).toBeLessThan(used.indexOf('main'));
    // A record of another launch (one more variable): started, not taken; the turn starts its own.
    await fs.writeFile(record, JSON.stringify({ ...recorded, set: { ...recorded.set, CAL_TEST_OTHER_LAUNCH: '1' } }), { mode: 0o600 });
    const other = await traced(2);
    expect(other.filter((m) => m === 'structured-spawned')).toHaveLength(2);
    expect(other.indexOf('structured-spawned')).toBeLessThan(other.indexOf('main'));
    expect(other.lastIndexOf('structured-spawned')).toBeGreaterThan(other.indexOf('main'));
    // That turn wrote the record again, as the turn launches it.
    expect(JSON.parse(await fs.readFile(record, 'utf8')).set).toEqual(recorded.set);
    // Turned off: the turn starts its CLI after its modules, as without a record.
    const off = await traced(3, { CAL_EARLY_LAUNCH: '0' });
    expect(off.filter((m) => m === 'structured-spawned')).toHaveLength(1);
    expect(off.indexOf('structured-spawned')).toBeGreaterThan(off.indexOf('main'));
  });

  it('system prompt and MCP config reach claude -p natively; --strict-mcp-config leaves the user\'s own MCP servers out', async () => {
    const proxy = await startRecordingProxy(server.url);
    try {
      const dir = path.join(suite.root, 'runtime');
      const project = path.join(dir, 'project');
      await fs.mkdir(project, { recursive: true });
      const script = path.join(dir, 'probe.mjs');
      await fs.writeFile(script, mcpProbeSource());
      const config = path.join(dir, 'mcp.json');
      const log = path.join(dir, 'probe.jsonl');
      await fs.writeFile(config, JSON.stringify({ mcpServers: { calprobe: { command: process.execPath, args: [script, log] } } }));
      await allowProbeToolInProject('claude-code', project);
      // A server of the user's own config: the structured launch must not start it.
      const userLog = path.join(dir, 'user-probe.jsonl');
      const claudeJson = path.join(suite.env.HOME!, '.claude.json');
      const current = JSON.parse(await fs.readFile(claudeJson, 'utf8'));
      await fs.writeFile(claudeJson, JSON.stringify({ ...current, mcpServers: { userprobe: { type: 'stdio', command: process.execPath, args: [script, userLog] } } }, null, 2));

      const env = { ...suite.env, ANTHROPIC_BASE_URL: proxy.url };
      const run = await runCal(
        ['--state-dir', suite.state, 'start', '--provider', 'claude-code', '--transport', 'structured', '--cwd', project, '--system-prompt', 'Marker STRUCTSYS-7781.', '--mcp-config', config, '--json', ...TIMEOUT, 'Call it [[cal:mcp=calprobe.echo {"text":"via-mcp"}]]'],
        { env },
      );
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.json.turn.answer).toBe('Tool finished: echo: via-mcp');
      expect(run.json.turn.tools).toEqual([expect.objectContaining({ kind: 'mcp', server: 'calprobe', name: 'echo', input: { text: 'via-mcp' }, status: 'completed', output: 'echo: via-mcp' })]);
      expect(proxy.bodies().some((b) => b.includes('Marker STRUCTSYS-7781.'))).toBe(true);
      const calls = (await fs.readFile(log, 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l));
      expect(calls.filter((c) => c.method === 'tools/call')).toEqual([{ method: 'tools/call', name: 'echo', arguments: { text: 'via-mcp' } }]);
      await expect(fs.readFile(userLog, 'utf8')).rejects.toThrow(/ENOENT/);
      await fs.writeFile(claudeJson, JSON.stringify({ ...JSON.parse(await fs.readFile(claudeJson, 'utf8')), mcpServers: {} }, null, 2));
    } finally {
      await proxy.close();
    }
  });
});
