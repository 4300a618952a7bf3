import { spawn } from 'node:child_process';
import { realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpProbeSource } from '../../src/certify/mcp-probe.js';
import { startRecordingProxy } from '../../src/certify/recording-proxy.js';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { handleFromStderr, interruptedCal, runCal, type CalRun } from '../support/cal.js';
import { calBin, cliBin, pinnedCli } from '../support/clis.js';
import { makePiHome, type ModelCliHome } from '../support/model-homes.js';
import { busyWhileStructuredTurnRuns, chainedStructuredTurns } from '../support/structured-busy.js';

/**
 * Issue 15 acceptance for Pi: `--transport structured` drives the real pinned `pi` in its JSON
 * mode (`pi --mode json --session <file>`, one process per turn, the same file every turn)
 * against the scripted model. No pane anywhere. The tests build on one session and run in order.
 */
const TIMEOUT = ['--timeout', '90'];

async function until(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function eventsOf(run: CalRun): string[] {
  return run.stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l).event);
}

async function readSession(file: string): Promise<any[]> {
  return (await fs.readFile(file, 'utf8').catch(() => ''))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

describe('Pi with --transport structured, end to end', () => {
  let server: ModelServer;
  let h: ModelCliHome;
  let state: string;
  let env: Record<string, string>;
  let work: string;
  let handle = '';
  const m1 = 'Remember the codeword GUAVA.';
  const m2 = 'What was the codeword?';

  const cal = (args: string[], input?: string, extraEnv: Record<string, string> = {}) => runCal(['--state-dir', state, ...args], { env: { ...env, ...extraEnv }, input });
  const inspect = async (ref = handle) => (await cal(['inspect', ref, '--json'])).json;
  const lastUserMessages = () => server.turnRequests().at(-1)?.userMessages ?? [];

  beforeAll(async () => {
    server = await startModelServer({});
    h = await makePiHome(server.url);
    state = path.join(h.root, 'state');
    work = realpathSync(h.cwd);
    env = { ...h.env, PATH: `${path.dirname(cliBin('pi'))}:${h.env.PATH}` };
  });

  afterAll(async () => {
    await server?.close();
    await h?.cleanup();
  });

  it('start answers through pi --mode json; the handle has Pi\'s session id and the file chosen up front, no pane', async () => {
    const run = await cal(['start', '--provider', 'pi', '--transport', 'structured', '--cwd', work, ...TIMEOUT, m1]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('OK, I will remember the codeword GUAVA.');
    handle = handleFromStderr(run.stderr) ?? '';
    const view = await inspect();
    expect(view.provider).toMatchObject({ transport: 'structured', tmux: null, pendingSessionId: null, status: 'idle' });
    expect(view.panes).toEqual([]);
    expect(view.provider.cli.version).toBe(pinnedCli.pi.version);
    const id = view.provider.nativeSessionId as string;
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    // The file is where Pi keeps this folder's sessions, named by cal (not by Pi's own id).
    const file = view.provider.transcript.path as string;
    expect(path.dirname(file)).toBe(path.join(h.configDir, 'sessions', `--${work.slice(1).replace(/\//g, '-')}--`));
    expect(path.basename(file)).not.toContain(id);
    const records = await readSession(file);
    expect(records[0]).toMatchObject({ type: 'session', id, cwd: work });
    expect(records.filter((r) => r.type === 'message' && r.message.role === 'user').map((r) => r.message.content[0].text)).toEqual([m1]);
  });

  it('continue resumes the same file with only the new message and recalls', async () => {
    const before = await inspect();
    server.clearLog();
    const run = await cal(['continue', handle, '--json', '--events', ...TIMEOUT, m2]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was GUAVA.' });
    expect(eventsOf(run)).toEqual(['resuming', 'running', 'completed']);
    expect(server.turnRequests()).toHaveLength(1);
    expect(lastUserMessages()).toEqual([m1, m2]);
    const after = await inspect();
    expect(after.provider.nativeSessionId).toBe(before.provider.nativeSessionId);
    expect(after.provider.transcript.path).toBe(before.provider.transcript.path);
    expect((await readSession(after.provider.transcript.path)).filter((r) => r.type === 'session')).toHaveLength(1);
  });

  it('messages reach Pi exactly: 200 KB on stdin, leading and trailing blanks, a leading "-" or "@"', async () => {
    const big = `Big one [[cal:reply=BIG-OK]]\n${'0123456789abcdef'.repeat(12_800)}\n\n`;
    server.clearLog();
    const run = await cal(['continue', handle, '--json', ...TIMEOUT, '-'], big);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn.answer).toBe('BIG-OK');
    expect(lastUserMessages().at(-1)).toBe(big);
    for (const text of ['  indented\n\ttabbed  \n', '-v is not a flag', '@file is not a file']) {
      const r = await cal(['continue', handle, '--json', ...TIMEOUT, '-'], text);
      expect(r.code, r.stderr).toBe(0);
      expect(lastUserMessages().at(-1)).toBe(text);
    }
  });

  it('a persistent HTTP 500 is exit 10 with Pi\'s error text; the session goes on, the failed prompt sent once', async () => {
    const failing = 'This one fails [[cal:http=500]]';
    server.clearLog();
    const run = await cal(['continue', handle, '--json', ...TIMEOUT, failing]);
    expect(run.code).toBe(10);
    expect(run.json.turn).toMatchObject({ status: 'failed', answer: null });
    expect(run.json.error).toMatchObject({ kind: 'turn_failed', message: expect.stringMatching(/500(?: |: \{"message":")Mock internal server error/) });
    expect(server.turnRequests().filter((r) => r.lastUserMessage === failing)).toHaveLength(1);

    const next = await cal(['continue', handle, '--json', ...TIMEOUT, 'What was the codeword, after the failure?']);
    expect(next.code, next.stderr).toBe(0);
    expect(next.json.turn.answer).toBe('The codeword was GUAVA.');
    const seen = lastUserMessages();
    expect(seen.filter((m) => m === m1)).toHaveLength(1);
    expect(seen.filter((m) => m === failing)).toHaveLength(1);
  });

  it("a user's Pi that retries a failed request (its own settings: retry on, Pi's default): cal waits for every retry, then reports the failure", async () => {
    // cal's scripted home turns retries off; a user's own Pi retries a 500 after its agent_end.
    const settingsFile = path.join(env.PI_CODING_AGENT_DIR as string, 'settings.json');
    const settings = await fs.readFile(settingsFile, 'utf8');
    await fs.writeFile(settingsFile, JSON.stringify({ ...JSON.parse(settings), retry: { enabled: true, maxRetries: 2, baseDelayMs: 100 } }));
    try {
      const failing = 'This one fails, retried [[cal:http=500]]';
      server.clearLog();
      const run = await cal(['continue', handle, '--json', ...TIMEOUT, failing]);
      // Counted as cal returns: a turn ended on the first agent_end would see one attempt here.
      const attempts = server.turnRequests().filter((r) => r.lastUserMessage === failing).length;
      expect(run.code, run.stderr).toBe(10);
      expect(run.json.turn).toMatchObject({ status: 'failed', answer: null });
      expect(attempts).toBe(3);
    } finally {
      await fs.writeFile(settingsFile, settings);
    }
    const next = await cal(['continue', handle, '--json', ...TIMEOUT, 'What was the codeword, after the retries?']);
    expect(next.code, next.stderr).toBe(0);
    expect(next.json.turn.answer).toBe('The codeword was GUAVA.');
  });

  it('--stream prints the tool call and its result while the turn runs, then the text', async () => {
    const lines: any[] = [];
    const child = spawn('node', [calBin, '--state-dir', state, 'continue', handle, '--stream', '--json', ...TIMEOUT, 'Run it [[cal:shell=echo PI-STREAMED]]'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let statusAtFirstTool: Promise<string> | null = null;
    const turnStatus = async () => {
      const dir = path.join(state, 'turns', handle);
      const files = (await fs.readdir(dir)).filter((f) => f.endsWith('.json')).sort();
      return JSON.parse(await fs.readFile(path.join(dir, files.at(-1)!), 'utf8')).status as string;
    };
    createInterface({ input: child.stdout }).on('line', (text) => {
      const value = JSON.parse(text);
      lines.push(value);
      if (value.type === 'tool' && !statusAtFirstTool) statusAtFirstTool = turnStatus();
    });
    const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? -1)));
    expect(code).toBe(0);
    // The first tool line was printed before the turn record said the turn had ended.
    expect(await statusAtFirstTool).not.toBe('completed');
    expect(lines.filter((l) => l.type === 'tool')).toEqual([
      { type: 'tool', phase: 'call', kind: 'shell', name: 'echo PI-STREAMED', input: { command: 'echo PI-STREAMED' } },
      { type: 'tool', phase: 'result', kind: 'shell', name: 'echo PI-STREAMED', status: 'completed', output: 'PI-STREAMED\n' },
    ]);
    // Text streams as deltas (Pi's message_update): its pieces join to the answer.
    expect(lines.filter((l) => l.type === 'text').map((l) => l.text).join('')).toBe('Tool finished: PI-STREAMED');
    expect(lines.at(-1).turn).toMatchObject({ status: 'completed', answer: 'Tool finished: PI-STREAMED', tools: [{ kind: 'shell', name: 'echo PI-STREAMED', output: 'PI-STREAMED\n', status: 'completed' }] });

    const plain = await cal(['continue', handle, '--stream', ...TIMEOUT, 'Again [[cal:shell=echo PI-PLAIN]]']);
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout.trim()).toBe('Tool finished: PI-PLAIN');
    expect(plain.stderr).toMatch(/^tool: shell echo PI-PLAIN \(running\)$/m);
    expect(plain.stderr).toMatch(/^tool: shell echo PI-PLAIN → completed: PI-PLAIN$/m);
  });

  it('a message starting with "/" reaches the model as text, not as a prompt template or command', async () => {
    server.clearLog();
    const run = await cal(['continue', handle, '--json', ...TIMEOUT, '/exit now']);
    expect(run.code, run.stderr).toBe(0);
    expect(lastUserMessages().at(-1)).toBe('\u200b/exit now');
  });

  it('turns chained back to back (each cal returns on agent_end, its pi may still be finishing): every resume carries each earlier turn once and one new message', async () => {
    await chainedStructuredTurns({ cal: (args) => cal(args), inspect, server, handle, timeout: TIMEOUT }, 'pi --mode json');
  });

  it('a continue while a structured turn runs: busy (5) at once, never sent; with --wait it waits in line and runs as its own turn', async () => {
    await busyWhileStructuredTurnRuns({ cal: (args) => cal(args), inspect, server, handle, codeword: 'GUAVA', timeout: TIMEOUT });
  });

  it('system prompt and MCP config (through cal\'s bridge extension) reach pi --mode json', async () => {
    const proxy = await startRecordingProxy(server.url);
    try {
      const dir = path.join(h.root, 'runtime');
      await fs.mkdir(dir, { recursive: true });
      const script = path.join(dir, 'probe.mjs');
      const log = path.join(dir, 'probe.jsonl');
      await fs.writeFile(script, mcpProbeSource());
      const config = path.join(dir, 'mcp.json');
      await fs.writeFile(config, JSON.stringify({ mcpServers: { calprobe: { command: process.execPath, args: [script, log] } } }));
      // The same Pi config, pointed at the recording proxy.
      const agentDir = path.join(dir, 'pi-agent');
      await fs.mkdir(agentDir, { recursive: true });
      const models = JSON.parse(await fs.readFile(path.join(h.configDir, 'models.json'), 'utf8'));
      models.providers.mock.baseUrl = `${proxy.url}/v1`;
      await fs.writeFile(path.join(agentDir, 'models.json'), JSON.stringify(models));
      await fs.copyFile(path.join(h.configDir, 'settings.json'), path.join(agentDir, 'settings.json'));
      const run = await cal(
        ['start', '--provider', 'pi', '--transport', 'structured', '--cwd', work, '--system-prompt', 'Marker PISYS-4417.', '--mcp-config', config, '--json', ...TIMEOUT, 'Call it [[cal:mcp=calprobe.echo {"text":"pi-mcp"}]]'],
        undefined,
        { PI_CODING_AGENT_DIR: agentDir },
      );
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.json.turn.answer).toBe('Tool finished: echo: pi-mcp');
      expect(run.json.turn.tools).toEqual([expect.objectContaining({ kind: 'mcp', server: 'calprobe', name: 'echo', input: { text: 'pi-mcp' }, status: 'completed' })]);
      expect(proxy.bodies().some((b) => b.includes('Marker PISYS-4417.'))).toBe(true);
      const calls = (await fs.readFile(log, 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l));
      expect(calls.filter((c) => c.method === 'tools/call')).toEqual([{ method: 'tools/call', name: 'echo', arguments: { text: 'pi-mcp' } }]);
    } finally {
      await proxy.close();
    }
  });

  it('cal killed mid-turn: once Pi finished, cal recover settles the turn from the session file and sends nothing', async () => {
    const message = 'Recover me [[cal:delay=2500]]';
    server.clearLog();
    const child = spawn(process.execPath, [calBin, '--state-dir', state, 'continue', handle, ...TIMEOUT, message], { env, stdio: 'ignore' });
    await until(() => server.turnRequests().some((r) => r.lastUserMessage === message), 'the model to get the message');
    child.kill('SIGKILL');
    if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.on('exit', r));
    const file = (await inspect()).provider.transcript.path as string;
    // The orphaned pi ends the turn in its session file.
    await until(async () => (await readSession(file)).some((r) => r.type === 'message' && r.message.role === 'assistant' && JSON.stringify(r.message.content).includes('Received: Recover me')), 'pi to end the turn');
    const rec = await cal(['recover', '--json']);
    expect(rec.code, rec.stdout + rec.stderr).toBe(0);
    expect(rec.json.turns).toEqual([expect.objectContaining({ handle, before: 'running', action: 'settled_from_transcript', status: 'completed', answer: 'Received: Recover me' })]);
    expect(server.turnRequests().filter((r) => r.lastUserMessage === message)).toHaveLength(1);
  });

  // The handle records pi's pid and start time at its launch: recover tells it still works.
  it('cal killed mid-turn while Pi still works: cal recover waits for it and sends nothing', async () => {
    const message = 'Recover me slowly [[cal:delay=6000]]';
    server.clearLog();
    const child = spawn(process.execPath, [calBin, '--state-dir', state, 'continue', handle, ...TIMEOUT, message], { env, stdio: 'ignore' });
    await until(() => server.turnRequests().some((r) => r.lastUserMessage === message), 'the model to get the message');
    child.kill('SIGKILL');
    if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.on('exit', r));
    const rec = await cal(['recover', '--json']);
    expect(rec.code, rec.stdout + rec.stderr).toBe(0);
    expect(rec.json.turns).toEqual([expect.objectContaining({ handle, before: 'running', action: 'waited_for_cli', status: 'completed', answer: 'Received: Recover me slowly' })]);
    expect(server.turnRequests().filter((r) => r.lastUserMessage === message)).toHaveLength(1);
    expect((await inspect()).provider.cliProcess ?? null).toBeNull();
  });

  // The session file is named by the id chosen up front, on the handle before the launch.
  it('cal killed during the first turn: cal recover settles it from the session file, never a second send', async () => {
    const message = 'Remember the codeword PIFIRSTKILL. [[cal:delay=2500]]';
    server.clearLog();
    const child = spawn(process.execPath, [calBin, '--state-dir', state, 'start', '--provider', 'pi', '--transport', 'structured', '--cwd', work, '--name', 'pi-first-kill', ...TIMEOUT, message], { env, stdio: 'ignore' });
    await until(() => server.turnRequests().some((r) => r.lastUserMessage === message), 'the model to get the message');
    child.kill('SIGKILL');
    if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.on('exit', r));
    const pending = (await inspect('pi-first-kill')).provider.pendingSessionId as string;
    const folder = path.join(h.configDir, 'sessions', `--${work.slice(1).replace(/\//g, '-')}--`);
    const named = async () => (await fs.readdir(folder)).find((n) => n.endsWith(`_${pending}.jsonl`));
    await until(async () => Boolean(await named()) && (await readSession(path.join(folder, (await named())!))).some((r) => r.message?.role === 'assistant'), 'pi to end the turn');
    const rec = await cal(['recover', '--json']);
    expect(rec.code, rec.stdout + rec.stderr).toBe(0);
    expect(rec.json.turns).toEqual([expect.objectContaining({ action: 'settled_from_transcript', status: 'completed', answer: 'OK, I will remember the codeword PIFIRSTKILL.' })]);
    expect(server.turnRequests().filter((r) => r.lastUserMessage === message)).toHaveLength(1);
  });

  it('Ctrl-C during a turn, at a terminal (cal and pi both get SIGINT) or to cal alone (its cancel): the turn is interrupted (11), sent once, and the session goes on', async () => {
    for (const group of [true, false]) {
      const message = `Interrupt me ${group ? 'at the terminal' : 'through cal'} [[cal:delay=8000]]`;
      server.clearLog();
      const run = await interruptedCal(state, ['continue', handle, '--json', ...TIMEOUT, message], env, { group, running: () => server.turnRequests().some((r) => r.lastUserMessage === message) });
      expect(run.code, run.stdout).toBe(11);
      expect(JSON.parse(run.stdout).turn).toMatchObject({ status: 'interrupted', answer: null });
      // Cancelled, not waited out: the scripted model would answer after 8 s.
      expect(run.ms).toBeLessThan(7000);
      expect(server.turnRequests().filter((r) => r.lastUserMessage === message)).toHaveLength(1);
      expect((await inspect()).provider.cliProcess ?? null).toBeNull();
    }
    const next = await cal(['continue', handle, '--json', ...TIMEOUT, m2]);
    expect(next.code, next.stderr).toBe(0);
    expect(next.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was GUAVA.' });
  });

  it('when the session file is gone, continue is resume_unavailable (9), never a fresh start', async () => {
    const view = await inspect();
    const file = view.provider.transcript.path as string;
    await fs.rename(file, `${file}.moved`);
    try {
      server.clearLog();
      const run = await cal(['continue', handle, '--json', ...TIMEOUT, 'Are you there?']);
      expect(run.code).toBe(9);
      expect(run.json.error.kind).toBe('resume_unavailable');
      expect(run.json.error.message).toContain(`pi session ${view.provider.nativeSessionId} has no session file`);
      expect(server.turnRequests()).toEqual([]);
    } finally {
      await fs.rename(`${file}.moved`, file);
    }
  });
});
