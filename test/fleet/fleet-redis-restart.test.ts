import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, runCal, type CalRun } from '../support/cal.js';
import { startRedis, startWorker, stopChild, until, type RedisServer, type WorkerProcess, standInFleet, standInWorker } from '../support/fleet.js';
import { timesSent } from '../support/structured-fakes.js';

/**
 * The fleet (docs/fleet.md, "Faults") across a Redis restart: redis-server with its append-only
 * file (appendonly yes, appendfsync always) is SIGKILLed while turns run and a start waits in the
 * queue, and started again on the same port and directory. Every call settles once, the CLI got
 * each message once, and the job that waited is not lost.
 */
describe('a fleet whose Redis restarts (with persistence) while turns run', () => {
  let root: string;
  let redis: RedisServer;
  let worker: WorkerProcess;
  let clientEnv: Record<string, string>;
  let log: string;
  let work: string;

  const cal = (args: string[]): Promise<CalRun> => runCal(['--fleet', redis.url, ...args], { env: clientEnv, timeoutMs: 120_000 });
  const start = (message: string, ...more: string[]) => cal(['start', '--provider', 'cursor', '--cwd', work, '--json', ...more, message]);
  const sent = (text: string) => timesSent(log, text);

  beforeAll(async () => {
    const fleet = await standInFleet('fleet-redis-restart');
    ({ root, log, work } = fleet);
    await fs.mkdir(path.join(root, 'redis'));
    redis = await startRedis(path.join(root, 'redis'), { appendonly: true });
    clientEnv = baseEnv({ HOME: path.join(root, 'client-home') });
    const host = await standInWorker(fleet, 'm1', { CURSOR_API_KEY: 'test', CAL_FLEET_LOCK_MS: '2000' });
    // One slot: a second start waits in the new-session queue while Redis restarts.
    worker = await startWorker(redis.url, 'm1', host.state, host.env, ['--slots', '1']);
  }, 60_000);

  afterAll(async () => {
    if (worker) await stopChild(worker.child, 'SIGKILL');
    await redis?.stop();
    await fs.rm(root, { recursive: true, force: true });
  });

  it('turns in flight and a queued start each settle once; the CLI got every message once', async () => {
    const s = await start('Remember the codeword PERSIST.', '--name', 'persist');
    expect(s.code, s.stderr).toBe(0);
    const turn = 'What was the codeword? Through a restart. [[fake:delay=4000]]';
    const first = 'Remember the codeword FIRST. [[fake:delay=4000]]';
    const queued = 'Remember the codeword QUEUED.';
    const continuing = cal(['continue', 'persist', '--json', '--host-wait', '60', turn]);
    const starting = start(first, '--host-wait', '60');
    await until(async () => (await sent(turn)) === 1 && (await sent(first)) === 1, 'both turns at the CLI');
    const waiting = start(queued, '--host-wait', '60');
    // Its job is in Redis, waiting for the one slot.
    await until(() => execFileSync('redis-cli', ['-p', String(redis.port), 'llen', 'bull:cal-new:wait'], { encoding: 'utf8' }).trim() === '1', 'the start queued');
    expect(await sent(queued)).toBe(0);

    await redis.stop();
    await new Promise((r) => setTimeout(r, 1500));
    redis = await startRedis(path.join(root, 'redis'), { appendonly: true, port: redis.port });

    const [c, f, q] = await Promise.all([continuing, starting, waiting]);
    expect(c.code, c.stdout + c.stderr).toBe(0);
    expect(c.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was PERSIST.' });
    expect(f.code, f.stdout + f.stderr).toBe(0);
    expect(f.json.turn.status).toBe('completed');
    expect(q.code, q.stdout + q.stderr).toBe(0);
    expect(q.json.turn.status).toBe('completed');
    for (const m of [turn, first, queued]) expect(await sent(m)).toBe(1);
    // The worker lived through it and still serves: the handle's records hold the turn once.
    const again = await cal(['continue', 'persist', '--json', 'What was the codeword?']);
    expect(again.code, again.stderr).toBe(0);
    const detail = await cal(['inspect', 'persist', '--json']);
    expect(detail.code, detail.stderr).toBe(0);
    expect(detail.json.turns.filter((t: { message: string }) => t.message === turn)).toHaveLength(1);
  }, 150_000);
});

/**
 * A Redis restarted *without* its data (no append-only file) while a turn runs: the job is gone,
 * so no worker will ever end it. The client ends with host_unavailable (17) within its bound, not
 * a wait for ever; the worker is listed again (its host registry is renewed with the heartbeat)
 * with the handles it owns, and serves them.
 */
describe('a fleet whose Redis restarts empty while a turn runs', () => {
  let root: string;
  let redis: RedisServer;
  let worker: WorkerProcess;
  let clientEnv: Record<string, string>;
  let log: string;
  let work: string;

  const cal = (args: string[]): Promise<CalRun> => runCal(['--fleet', redis.url, ...args], { env: clientEnv, timeoutMs: 90_000 });

  beforeAll(async () => {
    const fleet = await standInFleet('fleet-redis-empty');
    ({ root, log, work } = fleet);
    redis = await startRedis(root);
    clientEnv = baseEnv({ HOME: path.join(root, 'client-home') });
    const host = await standInWorker(fleet, 'm1', { CURSOR_API_KEY: 'test', CAL_FLEET_LOCK_MS: '2000' });
    worker = await startWorker(redis.url, 'm1', host.state, host.env);
  }, 60_000);

  afterAll(async () => {
    if (worker) await stopChild(worker.child, 'SIGKILL');
    await redis?.stop();
    await fs.rm(root, { recursive: true, force: true });
  });

  it('the waiting client ends typed within its bound; the worker and its handles are back in the listing', async () => {
    const s = await cal(['start', '--provider', 'cursor', '--cwd', work, '--name', 'amnesia', '--json', 'Remember the codeword AMNESIA.']);
    expect(s.code, s.stderr).toBe(0);
    const turn = 'What was the codeword? Through an empty restart. [[fake:delay=8000]]';
    const continuing = cal(['continue', 'amnesia', '--json', '--host-wait', '5', turn]);
    await until(async () => (await timesSent(log, turn)) === 1, 'the turn at the CLI');
    await redis.stop();
    await new Promise((r) => setTimeout(r, 1000));
    redis = await startRedis(root, { port: redis.port });
    const t0 = Date.now();
    const c = await continuing;
    expect(c.code, c.stdout + c.stderr).toBe(17);
    expect(c.json.error.kind).toBe('host_unavailable');
    expect(c.json.error.message).toMatch(/no longer holds this request/);
    expect(Date.now() - t0).toBeLessThan(30_000);
    expect(await timesSent(log, turn)).toBe(1);
    // The worker's heartbeat put it back in the registry, with the handles and names it owns.
    await until(async () => (await cal(['inspect', '--json'])).json?.hosts?.[0]?.available === true, 'the worker listed again', 20_000);
    const list = await cal(['inspect', '--json']);
    expect(list.json.hosts).toEqual([{ host: 'm1', available: true }]);
    expect(list.json.handles.map((h: { id: string }) => h.id)).toContain(s.json.handle);
    const again = await cal(['continue', 'amnesia', '--json', '--wait=30', 'What was the codeword?']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.json.turn.answer).toBe('The codeword was AMNESIA.');
  }, 150_000);
});
