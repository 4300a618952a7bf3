import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, runCal, type CalRun } from '../support/cal.js';
import { startRedis, startWorker, stopChild, until, type RedisServer, type WorkerProcess, standInFleet, standInWorker, type StandInFleet } from '../support/fleet.js';
import { timesSent } from '../support/structured-fakes.js';

/**
 * What holds fleet-wide, not per worker (docs/fleet.md, "Once, fleet-wide"; docs/security.md):
 * a start is sent at most once whichever worker runs its job (its worker SIGKILLed mid-turn, or
 * the job replayed); a name is one session in the fleet, with a host down too; a turn that hit
 * its --timeout on a worker is settled by `cal recover`; `inspect` lists a host that is down with
 * its handles marked down (exit 17); a worker runs sessions only under its --allow-dir.
 * Two workers on a real redis-server, the Cursor CLI stand-in.
 */
describe('a fleet of two workers: once, fleet-wide', () => {
  let fleet: StandInFleet;
  let redis: RedisServer;
  const workers = new Map<string, WorkerProcess>();
  let clientEnv: Record<string, string>;

  const launch = async (host: string) => {
    const worker = await standInWorker(fleet, host, { CURSOR_API_KEY: 'test', CAL_FLEET_LOCK_MS: '2000', TMUX_TMPDIR: path.join(fleet.root, host) });
    workers.set(host, await startWorker(redis.url, host, worker.state, worker.env, ['--allow-dir', fleet.work]));
  };
  const kill = async (host: string) => stopChild(workers.get(host)!.child, 'SIGKILL');
  const cal = (args: string[]): Promise<CalRun> => runCal(['--fleet', redis.url, ...args], { env: clientEnv, timeoutMs: 120_000 });
  const start = (message: string, ...more: string[]) => cal(['start', '--provider', 'cursor', '--cwd', fleet.work, '--json', ...more, message]);
  const sent = (text: string) => timesSent(fleet.log, text);
  const redisCli = (...args: string[]) => execFileSync('redis-cli', ['-p', String(redis.port), ...args], { encoding: 'utf8' }).trim();
  const other = (host: string) => (host === 'm1' ? 'm2' : 'm1');

  beforeAll(async () => {
    fleet = await standInFleet('fleet-once');
    redis = await startRedis(fleet.root);
    clientEnv = baseEnv({ HOME: path.join(fleet.root, 'client-home') });
    await Promise.all(['m1', 'm2'].map(launch));
  }, 60_000);

  afterAll(async () => {
    for (const w of workers.values()) await stopChild(w.child, 'SIGKILL');
    await redis?.stop();
    await fs.rm(fleet.root, { recursive: true, force: true });
  });

  it('a start whose worker is SIGKILLed mid-turn is not sent again by the other worker: unconfirmed (19), the CLI got it once', async () => {
    const message = 'Remember the codeword TWICE. [[fake:delay=6000]]';
    const call = start(message, '--host-wait', '30');
    await until(async () => (await sent(message)) === 1, 'the start at the CLI', 30_000);
    // The fleet's first handle: its host took the start (it records the handle once the message left).
    await until(() => redisCli('hvals', 'cal:fleet:handles') !== '', 'the handle recorded', 15_000);
    const host = redisCli('hvals', 'cal:fleet:handles');
    expect(['m1', 'm2']).toContain(host);
    await kill(host);
    const r = await call;
    expect(r.code, r.stdout + r.stderr).toBe(19);
    expect(r.json.error.kind).toBe('unconfirmed');
    expect(r.json.error.message).toMatch(new RegExp(`taken by host ${host}, which went down before it ended; it is not sent again`));
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(await sent(message)).toBe(1);
    await launch(host);
  }, 120_000);

  it('a new-session job replayed after it ended, on the other worker, gives the first result and sends nothing', async () => {
    const message = 'Remember the codeword REPLAY.';
    const s = await start(message);
    expect(s.code, s.stderr).toBe(0);
    const queue = new Queue('cal-new', { connection: { host: '127.0.0.1', port: redis.port } });
    try {
      const job = (await queue.getJobs(['completed'])).find((j) => j.data.operation.options.message === message)!;
      expect(job).toBeDefined();
      // Its host is down: the replay can only run on the other worker.
      await kill(s.json.host);
      await job.retry('completed');
      await until(async () => {
        const again = await queue.getJob(job.id!);
        return again !== undefined && again.attemptsStarted >= 2 && (await again.getState()) === 'completed';
      }, 'the replayed job ended', 30_000);
      const replayed = (await queue.getJob(job.id!))!.returnvalue;
      expect(replayed).toMatchObject({ ok: true, host: s.json.host, value: { handle: { id: s.json.handle }, turn: { status: 'completed' } } });
    } finally {
      await queue.close();
    }
    expect(await sent(message)).toBe(1);
    await launch(s.json.host);
  }, 120_000);

  it('a name is one session fleet-wide: with its host down a second --name start is refused (2), continue goes to its own host, --replace needs that host', async () => {
    const first = await start('Remember the codeword ORIGINAL.', '--name', 'dup');
    expect(first.code, first.stderr).toBe(0);
    const host = first.json.host as string;
    await kill(host);
    const second = await start('Remember the codeword IMPOSTOR.', '--name', 'dup');
    expect(second.code, second.stdout + second.stderr).toBe(2);
    expect(second.json.error.message).toMatch(new RegExp(`a handle named dup already exists on host ${host}`));
    expect(await sent('Remember the codeword IMPOSTOR.')).toBe(0);
    const t0 = Date.now();
    const down = await cal(['continue', 'dup', '--json', '--host-wait', '2', 'What was the codeword?']);
    expect(down.code, down.stderr).toBe(17);
    expect(Date.now() - t0).toBeLessThan(15_000);
    const replace = await start('Remember the codeword REPLACER.', '--name', 'dup', '--replace', '--host-wait', '2');
    expect(replace.code, replace.stderr).toBe(17);
    expect(await sent('Remember the codeword REPLACER.')).toBe(0);
    await launch(host);
    const back = await cal(['continue', 'dup', '--json', 'What was the codeword?']);
    expect(back.code, back.stderr).toBe(0);
    expect(back.json).toMatchObject({ handle: first.json.handle, host, turn: { answer: 'The codeword was ORIGINAL.' } });
    // With its host up, --replace removes the old one there and the name names the new session.
    const replaced = await start('Remember the codeword SECOND.', '--name', 'dup', '--replace');
    expect(replaced.code, replaced.stderr).toBe(0);
    const now = await cal(['continue', 'dup', '--json', 'What was the codeword?']);
    expect(now.json).toMatchObject({ handle: replaced.json.handle, turn: { answer: 'The codeword was SECOND.' } });
    const old = await cal(['inspect', first.json.handle, '--json']);
    expect(old.code).toBe(3);
  }, 120_000);

  it('a fleet turn that hit --timeout is settled by cal recover (its worker lives on)', async () => {
    const s = await start('Remember the codeword SLOW.', '--name', 'slow');
    expect(s.code, s.stderr).toBe(0);
    const timedOut = await cal(['continue', 'slow', '--json', '--timeout', '1', 'What was the codeword? [[fake:delay=3000]]']);
    expect(timedOut.code, timedOut.stdout + timedOut.stderr).toBe(14);
    const before = await cal(['inspect', 'slow', '--json']);
    expect(['sending', 'running']).toContain(before.json.turns.at(-1).status);
    await new Promise((r) => setTimeout(r, 3000));
    const recovered = await cal(['recover', '--json']);
    // The stand-in was stopped at the timeout: recover settles the turn (lost, exit 12, or completed).
    expect([0, 12], recovered.stdout + recovered.stderr).toContain(recovered.code);
    const item = recovered.json.turns.find((t: { turn: string }) => t.turn === timedOut.json.error.turn);
    expect(item, recovered.stdout).toBeDefined();
    expect(['completed', 'lost']).toContain(item.status);
    const after = await cal(['inspect', 'slow', '--json']);
    expect(after.json.turns.at(-1)).toMatchObject({ id: timedOut.json.error.turn, status: item.status });
    const next = await cal(['continue', 'slow', '--json', 'What was the codeword?']);
    expect(next.code, next.stderr).toBe(0);
  }, 120_000);

  it('inspect with a host down lists its handles with the HOST column marked down, and exits 17 (partial), text and --json', async () => {
    const started = [];
    // Until each host holds one (a new session goes to any worker with a free slot).
    for (let i = 0; i < 12 && new Set(started.map((s) => s.json.host)).size < 2; i++) {
      const s = await start(`Remember the codeword LIST${i}.`);
      expect(s.code, s.stderr).toBe(0);
      started.push(s);
    }
    const downHost = started[0]!.json.host as string;
    await new Promise((r) => setTimeout(r, 1500));
    await kill(downHost);
    const json = await cal(['inspect', '--json']);
    expect(json.code, json.stderr).toBe(17);
    expect(json.json.partial).toBe(true);
    expect(json.json.error.kind).toBe('host_unavailable');
    expect(json.json.hosts).toEqual(expect.arrayContaining([{ host: downHost, available: false }, { host: other(downHost), available: true }]));
    const listed = new Map(json.json.handles.map((h: { id: string }) => [h.id, h]));
    for (const s of started) {
      expect(listed.get(s.json.handle)).toMatchObject({ host: s.json.host, ...(s.json.host === downHost ? { hostDown: true } : {}) });
    }
    const text = await cal(['inspect']);
    expect(text.code).toBe(17);
    const lines = text.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^HOST\s+HANDLE\s+NAME/);
    expect(lines.find((l) => l.includes(started[0]!.json.handle))).toMatch(new RegExp(`^${downHost} \\(down\\)\\s`));
    expect(text.stderr).toMatch(new RegExp(`^cal: host_unavailable: the listing is partial: host ${downHost} did not answer`));
    await launch(downHost);
    const whole = await cal(['inspect', '--json']);
    expect(whole.code, whole.stderr).toBe(0);
  }, 120_000);

  it('a worker runs sessions only under its --allow-dir: elsewhere, through .. or a symbolic link, usage (2) before anything is sent', async () => {
    const outside = path.join(fleet.root, 'outside');
    await fs.mkdir(outside, { recursive: true });
    await fs.symlink(outside, path.join(fleet.work, 'link-out')).catch(() => undefined);
    for (const cwd of [outside, path.join(fleet.work, '..', 'outside'), path.join(fleet.work, 'link-out')]) {
      const message = `Remember the codeword OUT ${cwd}.`;
      const r = await cal(['start', '--provider', 'cursor', '--cwd', cwd, '--json', message]);
      expect(r.code, r.stdout + r.stderr).toBe(2);
      expect(r.json.error.message).toMatch(/runs sessions only under .*--allow-dir.*nothing was sent/);
      expect(await sent(message)).toBe(0);
    }
    const s = await start('Remember the codeword INSIDE.', '--name', 'inside');
    expect(s.code, s.stderr).toBe(0);
    const elsewhere = await cal(['continue', 'inside', '--cwd', outside, '--json', 'What was the codeword? OUT']);
    expect(elsewhere.code, elsewhere.stdout + elsewhere.stderr).toBe(2);
    expect(await sent('What was the codeword? OUT')).toBe(0);
  }, 60_000);
});
