import { realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingProxy, type RecordingProxy } from '../../src/certify/recording-proxy.js';
import { mcpProbeSource } from '../../src/certify/mcp-probe.js';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { processesTagged } from '../../src/util/tagged-processes.js';
import { handleFromStderr, killStateTmux, runCal, scratchDir, type CalRun } from '../support/cal.js';
import { cliBin, pinnedCli } from '../support/clis.js';

/**
 * Gemini CLI acceptance: the real pinned binary (0.61.0) against the scripted model, driven
 * through the built `cal` as a black box, in tmux and through the structured (headless) transport.
 * The tests of each transport build on each other (one logical session), so they run in order.
 *
 * The user's own Gemini home stands for a real one: JSON with comments, API-key auth, no retry
 * cap and no retention setting (cal bounds retries and turns retention off in the home it manages
 * per session, never in this one, whose settings file must stay byte for byte as it was).
 */
const TIMEOUT = ['--timeout', '90'];
const USER_SETTINGS = `{
  // the user's own settings: cal reads them and never writes them
  "security": { "auth": { "selectedType": "gemini-api-key" } },
  "model": { "name": "gemini-2.5-flash" },
  "general": { "enableAutoUpdate": false, "enableAutoUpdateNotification": false },
  "privacy": { "usageStatisticsEnabled": false },
  "telemetry": { "enabled": false }
}
`;

function eventsOf(run: CalRun): string[] {
  return run.stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l).event);
}

async function readSession(file: string): Promise<any[]> {
  return (await fs.readFile(file, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

interface World {
  root: string;
  state: string;
  work: string;
  userGemini: string;
  env: Record<string, string>;
  probeConfig: string;
  probeLog: string;
}

async function makeWorld(modelUrl: string): Promise<World> {
  const root = await scratchDir('gemini-e2e');
  const home = path.join(root, 'home');
  const userGemini = path.join(home, '.gemini');
  const work = path.join(root, 'work');
  const tmp = path.join(root, 'tmp');
  await Promise.all([fs.mkdir(userGemini, { recursive: true }), fs.mkdir(work), fs.mkdir(tmp)]);
  await fs.writeFile(path.join(userGemini, 'settings.json'), USER_SETTINGS);
  const probe = path.join(root, 'mcp-probe.mjs');
  const probeLog = path.join(root, 'mcp-requests.jsonl');
  await fs.writeFile(probe, mcpProbeSource());
  const probeConfig = path.join(root, 'mcp.json');
  await fs.writeFile(probeConfig, JSON.stringify({ mcpServers: { calprobe: { command: process.execPath, args: [probe, probeLog] } } }));
  const env = {
    // The pinned CLIs of this repository are what `gemini` on PATH finds.
    PATH: `${path.dirname(cliBin('gemini'))}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    HOME: home,
    TMPDIR: tmp,
    LANG: 'C.UTF-8',
    TERM: 'xterm-256color',
    GEMINI_API_KEY: 'dummy',
    GOOGLE_GEMINI_BASE_URL: modelUrl,
  };
  return { root, state: path.join(root, 'state'), work: realpathSync(work), userGemini, env, probeConfig, probeLog };
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

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('Gemini CLI in tmux, end to end', () => {
  let server: ModelServer;
  let proxy: RecordingProxy;
  let w: World;
  let userBefore: Record<string, string>;
  let handle = '';

  const cal = (args: string[], input?: string) => runCal(['--state-dir', w.state, ...args], { env: w.env, input });
  const inspect = async () => (await cal(['inspect', handle, '--json'])).json;

  beforeAll(async () => {
    server = await startModelServer({});
    // The model's request bodies, to see the system prompt cal handed to Gemini.
    proxy = await startRecordingProxy(server.url);
    w = await makeWorld(proxy.url);
    userBefore = await snapshot(w.userGemini);
  });

  afterAll(async () => {
    if (w?.state) await killStateTmux(w.state);
    await proxy?.close();
    await server?.close();
    if (w && process.env.CAL_KEEP_TEST_HOMES !== '1') await fs.rm(w.root, { recursive: true, force: true });
  });

  it('start with --mcp-config and --system-prompt: the MCP server is called, the prompt reaches the model; the user’s Gemini home is untouched', async () => {
    const run = await cal([
      'start',
      '--provider',
      'gemini',
      '--cwd',
      w.work,
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
    handle = handleFromStderr(run.stderr) ?? run.json.handle?.id ?? '';
    expect(handle).not.toBe('');
    const calls = (await fs.readFile(w.probeLog, 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(calls.filter((c) => c.method === 'tools/call')).toEqual([{ method: 'tools/call', name: 'echo', arguments: { text: 'PING-1' } }]);
    // The system prompt is in Gemini's system instruction (a context file of the managed home).
    const bodies = proxy.bodies().map((b) => JSON.parse(b));
    expect(bodies.some((b) => JSON.stringify(b.systemInstruction ?? '').includes('SYSPROMPT-4711'))).toBe(true);

    const view = await inspect();
    const id = view.provider.nativeSessionId as string;
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(view.provider.cli.version).toBe(pinnedCli.gemini.version);
    // The session lives in the Gemini home cal manages for this handle, in its state directory.
    const managed = path.join(w.state, 'homes', view.id, 'gemini-home');
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
    expect(pids.filter(alive)).toEqual([]);
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
    const turns = server.turnRequests();
    expect(turns).toHaveLength(1);
    expect(turns[0]!.userMessages).toEqual(['Remember the codeword KIWI. [[cal:mcp=calprobe.echo {"text":"PING-1"}]]', 'What was the codeword?', 'What was the codeword, again?']);
    // The resumed CLI appended to the same session file (one user record per message).
    const users = (await readSession(after.provider.transcript.path)).filter((r) => r.type === 'user' && typeof r.content?.[0]?.text === 'string' && !r.content[0].text.startsWith('<session_context>'));
    expect(users.map((r) => r.content[0].text)).toContain('What was the codeword, again?');
    expect(await snapshot(w.userGemini)).toEqual(userBefore);
  });

  it('a persistent HTTP 500 is turn_failed (10) with the CLI’s own error within 60 s; the session goes on', async () => {
    server.clearLog();
    const started = Date.now();
    const run = await cal(['continue', handle, '--json', ...TIMEOUT, 'This one fails [[cal:http=500]]']);
    const took = Date.now() - started;
    expect(run.code, run.stderr).toBe(10);
    expect(run.json.turn).toMatchObject({ status: 'failed', answer: null });
    expect(run.json.error.kind).toBe('turn_failed');
    expect(run.json.error.message).toMatch(/API Error: .*"code":500.*Mock internal server error/);
    expect(took).toBeLessThan(60_000);
    // Bounded by cal's cap on attempts: three requests, not Gemini's ten (or an endless retry).
    expect(server.turnRequests().filter((r) => r.lastUserMessage === 'This one fails [[cal:http=500]]')).toHaveLength(3);
    const ok = await cal(['continue', handle, ...TIMEOUT, 'What was the codeword?']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout.trim()).toBe('The codeword was KIWI.');
  });
});

describe('Gemini CLI through the structured (headless) transport, end to end', () => {
  let server: ModelServer;
  let w: World;
  let userBefore: Record<string, string>;
  let handle = '';

  const cal = (args: string[]) => runCal(['--state-dir', w.state, ...args], { env: w.env });

  beforeAll(async () => {
    server = await startModelServer({});
    w = await makeWorld(server.url);
    userBefore = await snapshot(w.userGemini);
  });

  afterAll(async () => {
    await server?.close();
    if (w && process.env.CAL_KEEP_TEST_HOMES !== '1') await fs.rm(w.root, { recursive: true, force: true });
  });

  it('start and continue: gemini -p with --session-id, then --resume; each request carries the history once and the new message once', async () => {
    const run = await cal(['start', '--provider', 'gemini', '--transport', 'structured', '--cwd', w.work, '--mcp-config', w.probeConfig, '--json', ...TIMEOUT, 'Remember the codeword FIG.']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn.answer).toBe('OK, I will remember the codeword FIG.');
    handle = handleFromStderr(run.stderr) ?? '';
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
    expect(view.provider.transcript.path.startsWith(path.join(w.state, 'homes', view.id, 'gemini-home'))).toBe(true);

    const tool = await cal(['continue', handle, '--json', ...TIMEOUT, 'Call the probe [[cal:mcp=calprobe.echo {"text":"PING-2"}]]']);
    expect(tool.code, tool.stderr).toBe(0);
    expect(tool.json.turn.answer).toBe('Tool finished: echo: PING-2');
    expect(tool.json.turn.tools).toEqual([expect.objectContaining({ kind: 'mcp', server: 'calprobe', name: 'echo' })]);
    expect(await snapshot(w.userGemini)).toEqual(userBefore);
  });

  it('a persistent HTTP 500 is turn_failed (10) with the CLI’s own error within 60 s; the session goes on', async () => {
    server.clearLog();
    const started = Date.now();
    const run = await cal(['continue', handle, '--json', ...TIMEOUT, 'This one fails [[cal:http=500]]']);
    const took = Date.now() - started;
    expect(run.code, run.stderr).toBe(10);
    expect(run.json.turn).toMatchObject({ status: 'failed', answer: null });
    expect(run.json.error.message).toMatch(/API Error: .*"code":500.*Mock internal server error/);
    expect(took).toBeLessThan(60_000);
    expect(server.turnRequests()).toHaveLength(3);
    const ok = await cal(['continue', handle, '--json', ...TIMEOUT, 'What was the codeword?']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.json.turn.answer).toBe('The codeword was FIG.');
  });
});
