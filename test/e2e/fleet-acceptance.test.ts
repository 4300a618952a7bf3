import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claudeCodeAdapter } from '../../src/adapters/claude-code/index.js';
import { openSessions } from '../../src/index.js';
import { runCal, type CalRun } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { startRedis, startWorker, stopChild, until, type RedisServer, type WorkerProcess } from '../support/fleet.js';

/**
 * The fleet's acceptance (issue 45, docs/fleet.md "Acceptance") with the real pinned Claude Code
 * in real tmux against the scripted model, on a real redis-server: three `cal worker` processes
 * (each its own state directory, so its own tmux server, and its own HOME) stand in for three
 * machines. The 30 sessions are 12 here by default (CAL_FLEET_ACCEPTANCE_SESSIONS=30 runs
 * the 30), plus the few the later steps start: the same paths run for each session, and 30 Claude
 * Code processes at once overload the shared 2-core machine CI runs on; docs/fleet.md says so.
 * Run under the real-CLI lock, alone.
 */
const spreadSessions = Number(process.env.CAL_FLEET_ACCEPTANCE_SESSIONS ?? 12);
describe('fleet acceptance: three workers driving the real Claude Code', () => {
  let suite: CliSuite;
  let redis: RedisServer;
  const hosts = ['a1', 'a2', 'a3'];
  const workers = new Map<string, WorkerProcess>();
  const envs = new Map<string, Record<string, string>>();
  const states = new Map<string, string>();
  let work: string;
  /** Every session started: handle, host, codeword. */
  const sessions: Array<{ handle: string; host: string; word: string }> = [];

  const seen = (text: string) => suite.server.turnRequests().filter((r) => r.lastUserMessage?.includes(text)).length;
  const cal = (args: string[]): Promise<CalRun> => runCal(['--fleet', redis.url, ...args], { env: { PATH: suite.env.PATH!, HOME: suite.home }, timeoutMs: 240_000 });
  const launch = async (host: string) => {
    workers.set(host, await startWorker(redis.url, host, states.get(host)!, envs.get(host)!, ['--slots', '2']));
  };
  const start = async (word: string) => {
    const s = await cal(['start', '--provider', 'claude-code', '--cwd', work, '--json', '--host-wait', '60', `Remember the codeword ${word}.`]);
    expect(s.code, s.stdout + s.stderr).toBe(0);
    const one = { handle: s.json.handle as string, host: s.json.host as string, word };
    sessions.push(one);
    return one;
  };
  const on = (host: string) => sessions.filter((s) => s.host === host);

  beforeAll(async () => {
    suite = await cliSuite('claude-code', { prefix: 'fleet-acceptance' });
    redis = await startRedis(suite.root);
    work = await suite.workDir('w');
    for (const host of hosts) {
      await fs.mkdir(path.join(suite.root, host), { recursive: true });
      const env = await claudeCodeAdapter.scriptedModelEnv(path.join(suite.root, host), suite.server.url, { ...suite.env });
      envs.set(host, { ...env, DISABLE_AUTOUPDATER: '1', CAL_FLEET_LOCK_MS: '3000' });
      // suite.stateDir: the suite ends this state directory's tmux server when it closes.
      states.set(host, suite.stateDir(`${host}-state`));
      await launch(host);
    }
  }, 180_000);

  afterAll(async () => {
    for (const w of workers.values()) await stopChild(w.child, 'SIGKILL');
    await redis?.stop();
    await suite?.close();
  });

  it('sessions started through the fleet spread over all three hosts; each, its pane killed, recalls its own codeword', async () => {
    const words = Array.from({ length: spreadSessions }, (_, i) => `SPREAD${i}X`);
    const started = await Promise.all(words.map(start));
    expect(new Set(started.map((s) => s.host))).toEqual(new Set(hosts));
    for (const s of started) expect((await cal(['kill-tmux', s.handle])).code).toBe(0);
    const recalled = await Promise.all(started.map((s) => cal(['continue', s.handle, '--json', 'What was the codeword?'])));
    recalled.forEach((r, i) => {
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.json).toMatchObject({ handle: started[i]!.handle, host: started[i]!.host });
      expect(r.json.turn.answer).toContain(words[i]);
    });
    const inspect = await cal(['inspect', '--json']);
    expect(inspect.code, inspect.stderr).toBe(0);
    for (const s of started) expect(inspect.json.handles.find((h: { id: string }) => h.id === s.handle)?.host).toBe(s.host);
  }, 600_000);

  it('a worker left down: its sessions\' continues exit 17 within the bound, nothing reaches the model; new starts land on the others', async () => {
    await stopChild(workers.get('a3')!.child, 'SIGKILL');
    const mine = on('a3')[0]!;
    const t0 = Date.now();
    const down = await cal(['continue', mine.handle, '--json', '--host-wait', '3', 'Host a3 down?']);
    expect(down.code, down.stdout + down.stderr).toBe(17);
    expect(down.json.error.kind).toBe('host_unavailable');
    expect(Date.now() - t0).toBeLessThan(3000 + 3000 + 4000);
    expect(seen('Host a3 down?')).toBe(0);
    const fresh = await Promise.all(['GORSE', 'HAZEL'].map(start));
    for (const f of fresh) expect(['a1', 'a2']).toContain(f.host);
  }, 300_000);

  it('a worker SIGKILLed while 5 of its turns run, and restarted: all 5 settle, the model saw each message once', async () => {
    // Five sessions on a1: the ones more are started while a1 is the only worker up.
    await stopChild(workers.get('a2')!.child, 'SIGKILL');
    const extra = ['IRIS', 'JUNIPER', 'KALE', 'LARCH', 'MAPLE'].slice(0, Math.max(0, 5 - on('a1').length));
    for (const f of await Promise.all(extra.map(start))) expect(f.host).toBe('a1');
    await launch('a2');
    const five = on('a1').slice(0, 5);
    expect(five).toHaveLength(5);
    const messages = five.map((s, i) => `What was the codeword? Killed worker, turn ${i}. [[cal:delay=4000]]`);
    const pending = five.map((s, i) => cal(['continue', s.handle, '--json', '--host-wait', '120', messages[i]!]));
    await until(() => five.every((_, i) => seen(`Killed worker, turn ${i}.`) === 1), 'the five turns at the model', 180_000);
    await stopChild(workers.get('a1')!.child, 'SIGKILL');
    await launch('a1');
    const settled = await Promise.all(pending);
    settled.forEach((r, i) => {
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.json.turn.answer).toContain(five[i]!.word);
    });
    five.forEach((_, i) => expect(seen(`Killed worker, turn ${i}.`)).toBe(1));
  }, 600_000);

  it('a second client continuing the same handle gets busy; the library and the CLI give the same JSON', async () => {
    const s = on('a1')[0]!;
    const slow = cal(['continue', s.handle, '--json', 'What was the codeword? Slow one. [[cal:delay=4000]]']);
    await until(() => seen('Slow one.') === 1, 'the slow turn at the model', 120_000);
    const second = await cal(['continue', s.handle, '--json', 'Second client']);
    expect(second.code, second.stdout + second.stderr).toBe(5);
    expect(second.json.error.kind).toBe('busy');
    expect((await slow).code).toBe(0);
    expect(seen('Second client')).toBe(0);
    const library = await openSessions({ fleet: { connection: redis.url } });
    try {
      const lib = await library.continue(s.handle, 'What was the codeword?');
      const cli = await cal(['continue', s.handle, '--json', 'What was the codeword?']);
      expect(cli.code, cli.stderr).toBe(0);
      const shape = (j: { handle: string; host: string; turn: { status: string; answer: string | null; error: unknown; tools: unknown } }) => ({ handle: j.handle, host: j.host, status: j.turn.status, answer: j.turn.answer, error: j.turn.error, tools: j.turn.tools });
      expect(shape({ handle: lib.handle.id, host: lib.handle.host!, turn: lib.turn })).toEqual(shape(cli.json));
      expect(lib.turn.answer).toContain(s.word);
    } finally {
      await library.close();
    }
  }, 300_000);
});
