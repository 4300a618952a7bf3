import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, runCal, type CalRun } from '../support/cal.js';
import { calBin } from '../support/clis.js';
import { startRedis, startWorker, stopChild, until, type RedisServer, type WorkerProcess, standInFleet, standInWorker } from '../support/fleet.js';
import { timesSent } from '../support/structured-fakes.js';

/**
 * What runs while a turn runs, through the fleet (docs/fleet.md): `cal events --follow`, detached
 * turns (`--detach`, then `cal wait`) and Ctrl-C on a `cal continue` (the turn is cancelled on its
 * host: 11, the session goes on). One worker on a real redis-server, the Cursor CLI stand-in.
 */
describe('following, detaching and cancelling through the fleet', () => {
  let root: string;
  let redis: RedisServer;
  let worker: WorkerProcess;
  let clientEnv: Record<string, string>;
  let log: string;
  let work: string;

  const cal = (args: string[]): Promise<CalRun> => runCal(['--fleet', redis.url, ...args], { env: clientEnv, timeoutMs: 90_000 });
  const sent = (text: string) => timesSent(log, text);
  const active = () => Number(execFileSync('redis-cli', ['-p', String(redis.port), 'llen', 'bull:cal-host-m1:active'], { encoding: 'utf8' }).trim());
  /** A cal child process (not awaited): its stdout lines so far, and its exit. */
  const spawnCal = (args: string[]) => {
    const child = spawn(process.execPath, [calBin, '--fleet', redis.url, ...args], { env: clientEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    return { child, lines: () => out.split('\n').filter(Boolean), stdout: () => out, stderr: () => err, exited };
  };

  beforeAll(async () => {
    const fleet = await standInFleet('fleet-live');
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

  it('cal events --follow prints the recorded events, then each new one as it comes, and ends when the handle is removed', async () => {
    const s = await cal(['start', '--provider', 'cursor', '--cwd', work, '--name', 'follow', '--json', 'Remember the codeword FOLLOW.']);
    expect(s.code, s.stderr).toBe(0);
    const follow = spawnCal(['events', 'follow', '--follow']);
    await until(() => follow.lines().some((l) => JSON.parse(l).event === 'completed'), 'the recorded events', 30_000);
    const before = follow.lines().length;
    const c = await cal(['continue', 'follow', '--json', 'What was the codeword? [[fake:delay=1000]]']);
    expect(c.code, c.stderr).toBe(0);
    await until(() => follow.lines().slice(before).some((l) => JSON.parse(l).event === 'completed' && JSON.parse(l).turn === c.json.turn.id), 'the new turn\'s events', 30_000);
    const fresh = follow.lines().slice(before).map((l) => JSON.parse(l));
    expect(fresh.map((e) => e.event)).toContain('running');
    for (const e of fresh) expect(e.handle).toBe(s.json.handle);
    expect(follow.child.exitCode).toBeNull();
    const removed = await cal(['remove', 'follow']);
    expect(removed.code, removed.stderr).toBe(0);
    expect(await follow.exited).toBe(0);
  }, 90_000);

  it('a follow whose reader is gone (SIGKILLed) ends on its host; none is left running', async () => {
    const s = await cal(['start', '--provider', 'cursor', '--cwd', work, '--name', 'orphan', '--json', 'Remember the codeword ORPHAN.']);
    expect(s.code, s.stderr).toBe(0);
    const follow = spawnCal(['events', 'orphan', '--follow']);
    await until(() => follow.lines().length > 0, 'the follow under way', 30_000);
    expect(active()).toBe(1);
    follow.child.kill('SIGKILL');
    await until(() => active() === 0, 'the follow job ended on its host', 20_000);
  }, 60_000);

  it('continue --detach returns once the message left; cal wait prints the result as continue would; the CLI got it once', async () => {
    const s = await cal(['start', '--provider', 'cursor', '--cwd', work, '--name', 'detach', '--json', 'Remember the codeword DETACH.']);
    expect(s.code, s.stderr).toBe(0);
    const message = 'What was the codeword? Detached. [[fake:delay=3000]]';
    const t0 = Date.now();
    const d = await cal(['continue', 'detach', '--detach', '--json', message]);
    expect(d.code, d.stderr).toBe(0);
    expect(Date.now() - t0).toBeLessThan(3000 + 2500);
    // Back once the message left, not once the turn ended.
    expect(d.json).toMatchObject({ handle: s.json.handle, turn: { status: 'sending' }, detached: {} });
    await until(async () => (await sent(message)) === 1, 'the message at the CLI');
    const w = await cal(['wait', 'detach', '--json']);
    expect(w.code, w.stderr).toBe(0);
    expect(w.json).toMatchObject({ handle: s.json.handle, host: 'm1', turn: { id: d.json.turn.id, status: 'completed', answer: 'The codeword was DETACH.' } });
    expect(await sent(message)).toBe(1);
    const started = await cal(['start', '--provider', 'cursor', '--cwd', work, '--detach', '--json', 'Remember the codeword DSTART. [[fake:delay=1500]]']);
    expect(started.code, started.stderr).toBe(0);
    const ws = await cal(['wait', started.json.handle, '--json']);
    expect(ws.code, ws.stderr).toBe(0);
    expect(ws.json.turn.answer).toBe('I will remember the codeword DSTART.');
  }, 90_000);

  it('Ctrl-C on a fleet cal continue cancels the turn on its host: interrupted (11), and the session goes on', async () => {
    const s = await cal(['start', '--provider', 'cursor', '--cwd', work, '--name', 'ctrlc', '--json', 'Remember the codeword CTRLC.']);
    expect(s.code, s.stderr).toBe(0);
    const message = 'A long one. [[fake:delay=20000]]';
    const run = spawnCal(['continue', 'ctrlc', '--json', message]);
    await until(async () => (await sent(message)) === 1, 'the turn at the CLI', 30_000);
    const t0 = Date.now();
    run.child.kill('SIGINT');
    const code = await run.exited;
    expect(code, run.stderr()).toBe(11);
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(JSON.parse(run.stdout()).turn).toMatchObject({ status: 'interrupted', answer: null });
    const detail = await cal(['inspect', 'ctrlc', '--json']);
    expect(detail.json.turns.at(-1)).toMatchObject({ message, status: 'interrupted' });
    const after = await cal(['continue', 'ctrlc', '--json', 'What was the codeword?']);
    expect(after.code, after.stderr).toBe(0);
    expect(after.json.turn.answer).toBe('The codeword was CTRLC.');
    expect(await sent(message)).toBe(1);
  }, 90_000);
});
