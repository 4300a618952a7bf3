import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingProxy, type RecordingProxy } from '../../src/certify/recording-proxy.js';
import { MANAGED_HOME_MARKER } from '../../src/adapters/claude-code/home.js';
import { mcpProbeSource } from '../../src/certify/mcp-probe.js';
import { processesMarkedBy } from '../../src/certify/processes.js';
import { processRunning, processesTagged } from '../../src/util/tagged-processes.js';
import { eventsOf, runCal, type CalRun } from '../support/cal.js';
import { cliSuite, pinnedVersion, type CliSuite } from '../support/cli-suite.js';
import { busyWhileStructuredTurnRuns, chainedStructuredTurns } from '../support/structured-busy.js';

/**
 * Gemini CLI acceptance: the real pinned binary (0.61.0) against the scripted model, driven
 * through the built `cal` as a black box, in tmux and through the structured (headless) transport.
 * The tests of each transport build on each other (one logical session), so they run in order.
 *
 * The user's own `~/.gemini` stands for a real one: JSON with comments, API-key auth, no retry
 * cap and no retention setting (cal bounds retries and turns retention off in the home it manages
 * per session, never in this one, whose settings file must stay byte for byte as it was).
 */
const TIMEOUT = ['--timeout', '90'];

/**
 * A persistent HTTP 500 on either transport: turn_failed (10) with Gemini's own error within 60 s,
 * bounded by cal's cap on attempts (three requests, not Gemini's ten, nor an endless retry).
 */
async function expectBounded500(cal: (args: string[]) => Promise<CalRun>, server: CliSuite['server'], handle: string): Promise<void> {
  server.clearLog();
  const started = Date.now();
  const run = await cal(['continue', handle, '--json', ...TIMEOUT, 'This one fails [[cal:http=500]]']);
  const took = Date.now() - started;
  expect(run.code, run.stderr).toBe(10);
  expect(run.json.turn).toMatchObject({ status: 'failed', answer: null });
  expect(run.json.error.kind).toBe('turn_failed');
  expect(run.json.error.message).toMatch(/API Error: .*"code":500.*Mock internal server error/);
  expect(took).toBeLessThan(60_000);
  expect(server.turnRequests().filter((r) => r.lastUserMessage === 'This one fails [[cal:http=500]]')).toHaveLength(3);
}
const USER_SETTINGS = `{
  // the user's own settings: cal reads them and never writes them
  "security": { "auth": { "selectedType": "gemini-api-key" } },
  "model": { "name": "gemini-2.5-flash" },
  "general": { "enableAutoUpdate": false, "enableAutoUpdateNotification": false },
  "privacy": { "usageStatisticsEnabled": false },
  "telemetry": { "enabled": false }
}
`;

async function readSession(file: string): Promise<any[]> {
  return (await fs.readFile(file, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

interface World {
  suite: CliSuite;
  userGemini: string;
  probeConfig: string;
  probeLog: string;
}

/**
 * A suite whose `~/.gemini` (in its HOME, no GEMINI_CLI_HOME set) stands for the user's own
 * (USER_SETTINGS), with an MCP probe beside it. The HOME carries cal's managed-home marker only
 * so that requests name their session for the scripted model's log.
 */
async function makeWorld(prefix: string): Promise<World> {
  const suite = await cliSuite('gemini', { prefix, env: { GEMINI_CLI_HOME: '' } });
  const userGemini = path.join(suite.home, '.gemini');
  await fs.mkdir(userGemini, { recursive: true });
  await fs.writeFile(path.join(userGemini, 'settings.json'), USER_SETTINGS);
  await fs.writeFile(path.join(suite.home, MANAGED_HOME_MARKER), '');
  const probe = path.join(suite.root, 'mcp-probe.mjs');
  const probeLog = path.join(suite.root, 'mcp-requests.jsonl');
  await fs.writeFile(probe, mcpProbeSource());
  const probeConfig = path.join(suite.root, 'mcp.json');
  await fs.writeFile(probeConfig, JSON.stringify({ mcpServers: { calprobe: { command: process.execPath, args: [probe, probeLog] } } }));
  return { suite, userGemini, probeConfig, probeLog };
}

/** Every entry of a folder tree with its bytes (links as their target), to prove nothing changed. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (d: string) => {
    for (const e of await fs.readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else out[path.relative(dir, p)] = e.isSymbolicLink() ? `-> ${await fs.readlink(p)}` : await fs.readFile(p, 'utf8');
    }
  };
  await walk(dir);
  return out;
}

describe('Gemini CLI in tmux, end to end', () => {
  let w: World;
  let server: CliSuite['server'];
  let proxy: RecordingProxy;
  let userBefore: Record<string, string>;
  let handle = '';

  // Through a proxy that keeps the model's request bodies, to see the system prompt cal handed over.
  const cal = (args: string[]) => w.suite.cal(args, { env: { GOOGLE_GEMINI_BASE_URL: proxy.url } });
  const inspect = () => w.suite.inspect(handle);

  beforeAll(async () => {
    w = await makeWorld('gemini-tmux');
    server = w.suite.server;
    proxy = await startRecordingProxy(server.url);
    userBefore = await snapshot(w.userGemini);
  });

  afterAll(async () => {
    await proxy?.close();
    await w?.suite.close();
  });

  it('start with --mcp-config and --system-prompt: the MCP server is called, the prompt reaches the model; the user’s Gemini home is untouched', async () => {
    const run = await cal([
      'start',
      '--provider',
      'gemini',
      '--cwd',
      w.suite.work,
      '--mcp-config',
      w.probeConfig,
      '--system-prompt',
      'Certification marker SYSPROMPT-4711.',
      '--json',
      ...TIMEOUT,
      'Remember the codeword KIWI. [[cal:mcp=calprobe.echo {"text":"PING-1"}]]',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn).toMatchObject({ status: 'completed', answer: 'Tool finished: echo: PING-1' });
    expect(run.json.turn.tools).toEqual([expect.objectContaining({ kind: 'mcp', server: 'calprobe', name: 'echo', input: { text: 'PING-1' }, status: 'completed' })]);
    handle = run.json.handle;
    expect(handle).toMatch(/\S/);
    const calls = (await fs.readFile(w.probeLog, 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(calls.filter((c) => c.method === 'tools/call')).toEqual([{ method: 'tools/call', name: 'echo', arguments: { text: 'PING-1' } }]);
    // The system prompt is in Gemini's system instruction (a context file of the managed home).
    const bodies = proxy.bodies().map((b) => JSON.parse(b));
    expect(bodies.some((b) => JSON.stringify(b.systemInstruction ?? '').includes('SYSPROMPT-4711'))).toBe(true);

    const view = await inspect();
    const id = view.provider.nativeSessionId as string;
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(view.provider.cli.version).toBe(pinnedVersion('gemini'));
    // The session lives in the Gemini home cal manages for this handle, in its state directory.
    const managed = path.join(w.suite.state, 'homes', view.id, 'gemini-home');
    expect(view.provider.transcript.path.startsWith(path.join(managed, '.gemini', 'tmp'))).toBe(true);
    const settings = JSON.parse(await fs.readFile(path.join(managed, '.gemini', 'settings.json'), 'utf8'));
    expect(settings).toMatchObject({
      general: { maxAttempts: 3, sessionRetention: { enabled: false } },
      ui: { errorVerbosity: 'full' },
      mcpServers: { calprobe: { trust: true } },
    });
    expect(await snapshot(w.userGemini)).toEqual(userBefore);
  });

  it('continue with the pane alive pastes into it (no relaunch) and recalls', async () => {
    const before = await inspect();
    const run = await cal(['continue', handle, '--json', '--events', ...TIMEOUT, 'What was the codeword?']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was KIWI.' });
    expect(eventsOf(run)).toEqual(['running', 'completed']);
    const after = await inspect();
    expect(after.panes).toHaveLength(1);
    expect(after.provider.tmux.paneId).toBe(before.provider.tmux.paneId);
  });

  it('kill-tmux leaves no Gemini process (checked by pid); continue resumes natively: each earlier turn once, one new message', async () => {
    const before = await inspect();
    const tag = before.provider.tmux.tag as string;
    const pids = await processesTagged(`CAL_PANE_TAG=${tag}`);
    expect(pids.length).toBeGreaterThan(0);
    expect((await cal(['kill-tmux', handle])).code).toBe(0);
    // Checked by pid: every process of the pane has exited by the time kill-tmux returns.
    const running = await Promise.all(pids.map(async (pid) => ((await processRunning(pid)) ? pid : null)));
    expect(running.filter((pid) => pid !== null)).toEqual([]);
    expect(await processesTagged(`CAL_PANE_TAG=${tag}`)).toEqual([]);

    server.clearLog();
    const run = await cal(['continue', handle, '--json', '--events', ...TIMEOUT, 'What was the codeword, again?']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn.answer).toBe('The codeword was KIWI.');
    expect(eventsOf(run)).toEqual(['lost_tmux', 'resuming', 'running', 'completed']);
    const after = await inspect();
    expect(after.panes).toHaveLength(2);
    expect(after.panes[0]).toMatchObject({ launch: 'resume', endedAt: null });
    expect(after.provider.nativeSessionId).toBe(before.provider.nativeSessionId);
    // One Gemini process holds the session: the killed pane's is gone, the resumed pane's runs.
    const managed = path.join(w.suite.state, 'homes', after.id, 'gemini-home');
    const holders = ((await processesMarkedBy(`GEMINI_CLI_HOME=${managed}`)) ?? []).filter((p) => p.command.includes(after.provider.cli.realPath));
    expect(holders).toHaveLength(1);
    expect(pids).not.toContain(holders[0]!.pid);
    const turns = server.turnRequests();
    expect(turns).toHaveLength(1);
    expect(turns[0]!.userMessages).toEqual(['Remember the codeword KIWI. [[cal:mcp=calprobe.echo {"text":"PING-1"}]]', 'What was the codeword?', 'What was the codeword, again?']);
    // The resumed CLI appended to the same session file (one user record per message).
    const users = (await readSession(after.provider.transcript.path)).filter((r) => r.type === 'user' && typeof r.content?.[0]?.text === 'string' && !r.content[0].text.startsWith('<session_context>'));
    expect(users.map((r) => r.content[0].text)).toContain('What was the codeword, again?');
    expect(await snapshot(w.userGemini)).toEqual(userBefore);
  });

  it('a persistent HTTP 500 is turn_failed (10) with the CLI’s own error within 60 s; the session goes on', async () => {
    await expectBounded500(cal, server, handle);
    const ok = await cal(['continue', handle, ...TIMEOUT, 'What was the codeword?']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout.trim()).toBe('The codeword was KIWI.');
  });
});

describe('cal demo --provider gemini', () => {
  let suite: CliSuite;

  beforeAll(async () => {
    suite = await cliSuite('gemini', { prefix: 'gemini-demo' });
  });

  afterAll(async () => {
    await suite?.close();
  });

  it('runs the whole loop offline (scripted model, Gemini in tmux, kill, native resume) and passes', async () => {
    // The demo makes its own scripted model, Gemini home and state in TMPDIR, and removes them.
    const tmp = await suite.workDir('tmp');
    const run = await runCal(['demo', '--provider', 'gemini'], { env: { ...suite.env, TMPDIR: tmp }, timeoutMs: 300_000 });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stdout).toContain('events: lost_tmux → resuming → running → completed');
    expect(run.stdout).toContain('the model saw 3 user messages in the resumed request');
    expect(run.stdout).toContain('demo: PASS');
    expect(await fs.readdir(tmp)).toEqual([]);
  }, 300_000);
});

describe('Gemini CLI through the structured (headless) transport, end to end', () => {
  let w: World;
  let server: CliSuite['server'];
  let userBefore: Record<string, string>;
  let handle = '';

  const cal = (args: string[]) => w.suite.cal(args);

  beforeAll(async () => {
    w = await makeWorld('gemini-structured');
    server = w.suite.server;
    userBefore = await snapshot(w.userGemini);
  });

  afterAll(async () => {
    await w?.suite.close();
  });

  it('start and continue: gemini -p with --session-id, then --resume; each request carries the history once and the new message once', async () => {
    const run = await cal(['start', '--provider', 'gemini', '--transport', 'structured', '--cwd', w.suite.work, '--mcp-config', w.probeConfig, '--json', ...TIMEOUT, 'Remember the codeword FIG.']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn.answer).toBe('OK, I will remember the codeword FIG.');
    handle = run.json.handle;
    const first = (await cal(['inspect', handle, '--json'])).json;
    expect(first.provider).toMatchObject({ transport: 'structured', tmux: null });
    const id = first.provider.nativeSessionId;

    server.clearLog();
    const next = await cal(['continue', handle, '--json', ...TIMEOUT, 'What was the codeword?']);
    expect(next.code, next.stderr).toBe(0);
    expect(next.json.turn.answer).toBe('The codeword was FIG.');
    const turns = server.turnRequests();
    expect(turns).toHaveLength(1);
    expect(turns[0]!.userMessages).toEqual(['Remember the codeword FIG.', 'What was the codeword?']);
    const view = (await cal(['inspect', handle, '--json'])).json;
    expect(view.provider.nativeSessionId).toBe(id);
    expect(view.provider.transcript.path.startsWith(path.join(w.suite.state, 'homes', view.id, 'gemini-home'))).toBe(true);

    const tool = await cal(['continue', handle, '--json', ...TIMEOUT, 'Call the probe [[cal:mcp=calprobe.echo {"text":"PING-2"}]]']);
    expect(tool.code, tool.stderr).toBe(0);
    expect(tool.json.turn.answer).toBe('Tool finished: echo: PING-2');
    expect(tool.json.turn.tools).toEqual([expect.objectContaining({ kind: 'mcp', server: 'calprobe', name: 'echo' })]);
    expect(await snapshot(w.userGemini)).toEqual(userBefore);
  });

  it('a persistent HTTP 500 is turn_failed (10) with the CLI’s own error within 60 s; the session goes on', async () => {
    await expectBounded500(cal, server, handle);
    expect(server.turnRequests()).toHaveLength(3);
    const ok = await cal(['continue', handle, '--json', ...TIMEOUT, 'What was the codeword?']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.json.turn.answer).toBe('The codeword was FIG.');
  });

  const until = async (what: string, check: () => Promise<boolean> | boolean, timeoutMs = 60_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const inspect = async () => (await cal(['inspect', handle, '--json'])).json;

  it('turns chained back to back (each cal returns on the result, its gemini -p may still be finishing): every resume carries each earlier turn once and one new message', async () => {
    await chainedStructuredTurns({ cal, inspect, server, handle, timeout: TIMEOUT }, 'gemini -p');
  });

  it('a continue while a structured turn runs: busy (5) at once, never sent; with --wait it waits in line and runs as its own turn', async () => {
    await busyWhileStructuredTurnRuns({ cal, inspect, server, handle, codeword: 'FIG', timeout: TIMEOUT });
  });

  it('cal killed mid-turn: once Gemini finished, cal recover settles the turn from the session file and sends nothing', async () => {
    const message = 'Recover me [[cal:delay=2500]]';
    server.clearLog();
    const bg = w.suite.spawnCal(['continue', handle, ...TIMEOUT, message]);
    await until('the model to get the message', () => server.turnRequests().some((r) => r.lastUserMessage === message));
    bg.child.kill('SIGKILL');
    await bg.done;
    const file = (await inspect()).provider.transcript.path as string;
    // The orphaned gemini -p ends the turn in its session file.
    await until('gemini to end the turn', async () => JSON.stringify(await readSession(file)).includes('Received: Recover me'));
    const rec = await cal(['recover', '--json']);
    expect(rec.code, rec.stdout + rec.stderr).toBe(0);
    expect(rec.json.turns).toEqual([expect.objectContaining({ handle, before: 'running', action: 'settled_from_transcript', status: 'completed', answer: 'Received: Recover me' })]);
    expect(server.turnRequests().filter((r) => r.lastUserMessage === message)).toHaveLength(1);
  });

  it('cal killed mid-turn while Gemini still works: cal recover waits for it and sends nothing', async () => {
    const message = 'Recover me slowly [[cal:delay=6000]]';
    server.clearLog();
    const bg = w.suite.spawnCal(['continue', handle, ...TIMEOUT, message]);
    await until('the model to get the message', () => server.turnRequests().some((r) => r.lastUserMessage === message));
    bg.child.kill('SIGKILL');
    await bg.done;
    const rec = await cal(['recover', '--json']);
    expect(rec.code, rec.stdout + rec.stderr).toBe(0);
    expect(rec.json.turns).toEqual([expect.objectContaining({ handle, before: 'running', action: 'waited_for_cli', status: 'completed', answer: 'Received: Recover me slowly' })]);
    expect(server.turnRequests().filter((r) => r.lastUserMessage === message)).toHaveLength(1);
    expect((await inspect()).provider.cliProcess ?? null).toBeNull();
  });

  it('Ctrl-C during a turn, at a terminal (cal and gemini both get SIGINT) or to cal alone (its cancel): the turn is interrupted (11), sent once, and the session goes on', async () => {
    for (const group of [true, false]) {
      const message = `Interrupt me ${group ? 'at the terminal' : 'through cal'} [[cal:delay=8000]]`;
      server.clearLog();
      const bg = w.suite.spawnCal(['continue', handle, '--json', ...TIMEOUT, message]);
      await until('the model to get the message', () => server.turnRequests().some((r) => r.lastUserMessage === message));
      if (group) process.kill(-(bg.child.pid as number), 'SIGINT');
      else bg.child.kill('SIGINT');
      const run = await bg.done;
      expect(run.code, run.stdout + run.stderr).toBe(11);
      expect(JSON.parse(run.stdout).turn).toMatchObject({ status: 'interrupted' });
      expect(server.turnRequests().filter((r) => r.lastUserMessage === message)).toHaveLength(1);
    }
    const next = await cal(['continue', handle, '--json', ...TIMEOUT, 'What was the codeword, after the interrupts?']);
    expect(next.code, next.stderr).toBe(0);
    expect(next.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was FIG.' });
  });
});
