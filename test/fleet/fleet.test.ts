import fs from 'node:fs/promises';
import path from 'node:path';
import { Queue, QueueEvents } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSessions } from '../../src/index.js';
import { baseEnv, runCal, type CalRun } from '../support/cal.js';
import { startRedis, startWorker, stopChild, until, type RedisServer, type WorkerProcess, standInFleet, standInWorker, workerDirs, type StandInFleet } from '../support/fleet.js';
import { fakeCli, timesSent } from '../support/structured-fakes.js';

/**
 * The fleet (docs/fleet.md) on a real redis-server and real BullMQ, three `cal worker` child
 * processes standing in for three machines (each its own state directory and HOME), and the
 * Cursor CLI stand-in (structured, no tmux) as every worker's CLI: the fast tests of routing,
 * faults and errors. test/e2e/fleet-real.test.ts runs a real pinned CLI in real tmux.
 */
describe('a fleet of three workers on a real Redis', () => {
  let root: string;
  let redis: RedisServer;
  const workers = new Map<string, WorkerProcess>();
  let clientEnv: Record<string, string>;
  let log: string;
  let fleet: StandInFleet;
  let work: string;

  const launch = async (host: string) => {
    const worker = await standInWorker(fleet, host, { CURSOR_API_KEY: 'sk-never-through-redis', CAL_FLEET_LOCK_MS: '2000', TMUX_TMPDIR: path.join(root, host) });
    workers.set(host, await startWorker(redis.url, host, worker.state, worker.env, ['--slots', '2']));
  };
  const cal = (args: string[]): Promise<CalRun> => runCal(['--fleet', redis.url, ...args], { env: clientEnv });
  const start = (message: string, ...more: string[]) => cal(['start', '--provider', 'cursor', '--cwd', work, '--json', ...more, message]);
  const turnsSent = (text: string) => timesSent(log, text);

  beforeAll(async () => {
    fleet = await standInFleet('fleet');
    ({ root, log, work } = fleet);
    redis = await startRedis(root);
    clientEnv = baseEnv({ HOME: path.join(root, 'client-home') });
    await Promise.all(['m1', 'm2', 'm3'].map(launch));
  }, 60_000);

  afterAll(async () => {
    for (const w of workers.values()) await stopChild(w.child, 'SIGKILL');
    await redis?.stop();
    await fs.rm(root, { recursive: true, force: true });
  });

  it('sessions started through the fleet spread over the hosts, each recalls its own codeword on continue, and inspect lists every host\'s handles with their host', async () => {
    const words = ['ALPHA', 'BRAVO', 'CHARLIE', 'DELTA', 'ECHO', 'FOXTROT'];
    const started = await Promise.all(words.map((w) => start(`Remember the codeword ${w}. [[fake:delay=300]]`)));
    for (const s of started) expect(s.code, s.stderr).toBe(0);
    const hosts = new Set(started.map((s) => s.json.host));
    expect(hosts.size).toBeGreaterThanOrEqual(2);
    for (const h of hosts) expect(['m1', 'm2', 'm3']).toContain(h);
    const continued = await Promise.all(started.map((s) => cal(['continue', s.json.handle, '--json', 'What was the codeword?'])));
    continued.forEach((c, i) => {
      expect(c.code, c.stderr).toBe(0);
      expect(c.json).toMatchObject({ handle: started[i]!.json.handle, host: started[i]!.json.host, turn: { status: 'completed', answer: `The codeword was ${words[i]}.` } });
    });
    // Each host's own state directory holds the handles it started, and only those.
    for (const s of started) {
      const own = await fs.readdir(path.join(workerDirs(root, s.json.host).state, 'handles'));
      expect(own.some((f) => f.startsWith(s.json.handle))).toBe(true);
    }
    const inspect = await cal(['inspect', '--json']);
    expect(inspect.code, inspect.stderr).toBe(0);
    const listed = new Map(inspect.json.handles.map((h: { id: string; host: string }) => [h.id, h.host]));
    for (const s of started) expect(listed.get(s.json.handle)).toBe(s.json.host);
    expect(inspect.json.hosts).toEqual([
      { host: 'm1', available: true },
      { host: 'm2', available: true },
      { host: 'm3', available: true },
    ]);
  }, 120_000);

  it('the library and the CLI give the same JSON through the fleet', async () => {
    const s = await start('Remember the codeword LIBRARY.', '--name', 'lib');
    expect(s.code, s.stderr).toBe(0);
    const sessions = await openSessions({ fleet: { connection: redis.url } });
    try {
      const events: string[] = [];
      const lib = await sessions.continue('lib', 'What was the codeword?', { onEvent: (e) => events.push(e.event) });
      const cli = await cal(['continue', 'lib', '--json', 'What was the codeword?']);
      const shape = (j: { handle: string; host: string; turn: Record<string, unknown> }) => ({ handle: j.handle, host: j.host, turn: { ...j.turn, id: typeof j.turn.id } });
      const t = lib.turn;
      expect(shape({ handle: lib.handle.id, host: lib.handle.host as string, turn: { id: t.id, status: t.status, answer: t.answer, turnKey: t.turnKey, error: t.error, tools: t.tools } })).toEqual(shape(cli.json));
      // Lifecycle events came back through BullMQ's job progress while the turn ran.
      expect(events).toContain('running');
      expect(events).toContain('completed');
      const missing = await sessions.continue('no-such-handle', 'hi').catch((e) => e);
      const cliMissing = await cal(['continue', 'no-such-handle', '--json', 'hi']);
      expect(missing.kind).toBe('not_found');
      expect(cliMissing.code).toBe(3);
      expect(cliMissing.json.error.kind).toBe('not_found');
    } finally {
      await sessions.close();
    }
  }, 60_000);

  it('a second client continuing the same handle gets busy (5), or waits with --wait', async () => {
    const s = await start('Remember the codeword BUSY.', '--name', 'busy');
    expect(s.code, s.stderr).toBe(0);
    const first = cal(['continue', 'busy', '--json', 'Slow one. [[fake:delay=2500]]']);
    await until(async () => (await turnsSent('Slow one. [[fake:delay=2500]]')) === 1, 'the first turn sent');
    const second = await cal(['continue', 'busy', '--json', 'Second']);
    expect(second.code, second.stderr).toBe(5);
    expect(second.json.error.kind).toBe('busy');
    const waited = await cal(['continue', 'busy', '--wait', '--json', 'Third, in line']);
    expect((await first).code).toBe(0);
    expect(waited.code, waited.stderr).toBe(0);
    expect(await turnsSent('Second')).toBe(0);
  }, 60_000);

  it('a worker SIGKILLed while its turns run and restarted: every turn settles once, no message is sent twice', async () => {
    const started = await Promise.all(['K1', 'K2', 'K3'].map((w) => start(`Remember the codeword ${w}.`, '--name', `kill-${w}`)));
    const host = started[0]!.json.host as string;
    const mine = started.filter((s) => s.json.host === host);
    const messages = mine.map((s, i) => `Long turn ${i} of ${s.json.handle}. [[fake:delay=2000]]`);
    const calls = mine.map((s, i) => cal(['continue', s.json.handle, '--json', '--host-wait', '60', messages[i]!]));
    await until(async () => (await Promise.all(messages.map(turnsSent))).every((n) => n === 1), 'the turns sent');
    await stopChild(workers.get(host)!.child, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 1000));
    await launch(host);
    const results = await Promise.all(calls);
    for (const r of results) {
      // Settled from the host's records as cal recover does: completed, or lost when the CLI died with its worker.
      expect([0, 12], r.stderr).toContain(r.code);
      expect(['completed', 'lost']).toContain(r.json.turn.status);
    }
    for (const m of messages) expect(await turnsSent(m)).toBe(1);
  }, 120_000);

  it('a host left down: its handles fail with host_unavailable (17) within the bound; new sessions go to the others', async () => {
    const s = await start('Remember the codeword DOWN.', '--name', 'down');
    const host = s.json.host as string;
    await stopChild(workers.get(host)!.child, 'SIGKILL');
    const t0 = Date.now();
    const c = await cal(['continue', 'down', '--json', '--host-wait', '2', 'Anyone there?']);
    const ms = Date.now() - t0;
    expect(c.code, c.stderr).toBe(17);
    expect(c.json.error.kind).toBe('host_unavailable');
    expect(ms).toBeLessThan(2000 + 3000 + 2500);
    expect(await turnsSent('Anyone there?')).toBe(0);
    const fresh = await Promise.all([1, 2, 3].map((i) => start(`Remember the codeword NEW${i}.`)));
    for (const f of fresh) {
      expect(f.code, f.stderr).toBe(0);
      expect(f.json.host).not.toBe(host);
    }
    await launch(host);
  }, 60_000);

  it('Redis unreachable: host_unavailable at once, never a hang; a wrong URL is usage', async () => {
    const t0 = Date.now();
    const r = await runCal(['--fleet', 'redis://127.0.0.1:1', 'continue', 'x', '--json', 'hi'], { env: clientEnv });
    expect(r.code, r.stderr).toBe(17);
    expect(r.json.error.kind).toBe('host_unavailable');
    expect(Date.now() - t0).toBeLessThan(5000);
    const bad = await runCal(['--fleet', 'http://example', 'inspect', '--json'], { env: clientEnv });
    expect(bad.code).toBe(2);
  }, 30_000);

  it('a worker refuses a job that is not one of cal\'s operations, and paths that would run something on it', async () => {
    const queue = new Queue('cal-host-m1', { connection: { host: '127.0.0.1', port: redis.port } });
    const events = new QueueEvents('cal-host-m1', { connection: { host: '127.0.0.1', port: redis.port } });
    try {
      await events.waitUntilReady();
      const job = await queue.add('x', { operation: { op: 'shell', command: 'touch /tmp/pwned' }, notAfter: null });
      // Bounded, but generous: on a loaded 2-core machine the worker took over 10 s to get to it.
      // Read from the job itself: an event reader can miss an end that came before its first read.
      await until(async () => (await queue.getJob(job.id!))?.finishedOn !== undefined, 'the job finished', 40_000);
      const result = (await queue.getJob(job.id!))!.returnvalue;
      expect(result).toMatchObject({ ok: false, error: { kind: 'usage' } });
      expect(result.error.message).toMatch(/not one of cal's operations/);
    } finally {
      await events.close();
      await queue.close();
    }
    const cliPath = await start('Hello', '--cli-path', fakeCli.cursor);
    expect(cliPath.code).toBe(2);
    expect(cliPath.json.error.message).toMatch(/cliPath names an executable on the worker's machine/);
  }, 90_000);

  it('no key and no environment value passes through Redis; a worker\'s state directory stays 0700', async () => {
    const { execFileSync } = await import('node:child_process');
    const dump = execFileSync('redis-cli', ['-p', String(redis.port), '--no-raw', 'eval', "local out = {} for _, k in ipairs(redis.call('keys', '*')) do local t = redis.call('type', k).ok if t == 'hash' then for _, v in ipairs(redis.call('hvals', k)) do table.insert(out, v) end elseif t == 'string' then table.insert(out, redis.call('get', k)) elseif t == 'stream' then for _, e in ipairs(redis.call('xrange', k, '-', '+')) do for _, v in ipairs(e[2]) do table.insert(out, v) end end end end return out", '0'], { encoding: 'utf8', maxBuffer: 64 << 20 });
    expect(dump).toContain('codeword');
    expect(dump).not.toContain('sk-never-through-redis');
    const mode = (await fs.stat(workerDirs(root, 'm1').state)).mode & 0o777;
    expect(mode).toBe(0o700);
  }, 30_000);
});
