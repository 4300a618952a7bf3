import { Worker, type Job } from 'bullmq';
import { CalError } from '../errors.js';
import { openLocalSessions, type LocalSessions } from '../library/sessions.js';
import type { Handle, TurnResult } from '../library/types.js';
import { connectFleet } from './connection.js';
import { runOperation } from './operations.js';
import { heartbeatMs, heartbeatTtlMs, HostName, hostQueue, JobData, keys, newSessionQueue, type JobProgress, type JobResult } from './protocol.js';

export interface WorkerOptions {
  /** The fleet's Redis URL. */
  connection: string;
  /** This machine's name in the fleet: the queue of the sessions it owns. */
  host: string;
  /** New sessions this worker runs at once (default 2). */
  slots?: number;
  stateDir?: string;
  /** The environment handed to the CLIs (default: process.env); never sent anywhere. */
  env?: Record<string, string | undefined>;
  /** BullMQ's job lock: a worker silent this long counts as dead and its jobs go back to its queue (default 10 s). */
  lockMs?: number;
  /** Called once the worker takes jobs. */
  onReady?: () => void;
}

export interface RunningWorker {
  readonly host: string;
  /** Stops taking jobs, lets the running ones end, and closes the connections. */
  stop(): Promise<void>;
}

/**
 * `cal worker`: the host's own sessions (its state directory, tmux server and CLI homes) serve
 * two queues: new sessions (any worker with a free slot) and the operations on the sessions this
 * host owns. Before taking any job it settles what a predecessor killed mid-turn left, as
 * `cal recover` does; the jobs BullMQ hands out again then find their turns settled.
 */
export async function startFleetWorker(o: WorkerOptions): Promise<RunningWorker> {
  const host = HostName.safeParse(o.host);
  if (!host.success) throw new CalError('usage', `--host: ${host.error.issues[0]?.message ?? 'invalid'} (got ${JSON.stringify(o.host)})`);
  const slots = o.slots ?? 2;
  if (!Number.isInteger(slots) || slots < 1) throw new CalError('usage', `--slots takes a whole number of at least 1, not ${String(o.slots)}`);
  const sessions = await openLocalSessions({ stateDir: o.stateDir, env: o.env });
  const redis = await connectFleet(o.connection, true);
  const beat = async () => {
    await redis.set(keys.alive(o.host), String(process.pid), 'PX', heartbeatTtlMs).catch(() => undefined);
  };
  await redis.sadd(keys.hosts, o.host);
  await beat();
  const timer = setInterval(() => void beat(), heartbeatMs);
  // A predecessor killed mid-turn left turns open: settled from the CLIs' transcripts first.
  await sessions.recover().catch(() => undefined);

  const lockDuration = o.lockMs ?? 10_000;
  const settings = { connection: redis, lockDuration, stalledInterval: Math.max(500, Math.floor(lockDuration / 2)), maxStalledCount: 20, drainDelay: 5 };
  // A job whose lock lapsed (Redis away longer than lockMs) is handed out again while its first
  // run still goes on in this process: the second run waits for the first and gives its result.
  const running = new Map<string, Promise<JobResult>>();
  const processor = async (job: Job) => {
    const id = String(job.id);
    const first = running.get(id);
    if (first) return first;
    const run = processJob(sessions, redis, o.host, job);
    running.set(id, run);
    try {
      return await run;
    } finally {
      running.delete(id);
    }
  };
  const workers = [
    new Worker(newSessionQueue, processor, { ...settings, concurrency: slots }),
    // Turns wait on CLIs, inspect and kill-tmux must not wait behind them; a second continue of a
    // handle must reach the handle's lock to be told busy, as on one machine.
    new Worker(hostQueue(o.host), processor, { ...settings, concurrency: 64 }),
  ];
  for (const w of workers) w.on('error', () => undefined);
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  o.onReady?.();
  return {
    host: o.host,
    async stop() {
      await Promise.all(workers.map((w) => w.close()));
      clearInterval(timer);
      await redis.del(keys.alive(o.host)).catch(() => undefined);
      await sessions.close();
      redis.disconnect();
    },
  };
}

async function processJob(sessions: LocalSessions, redis: import('ioredis').Redis, host: string, job: Job): Promise<JobResult> {
  const parsed = JobData.safeParse(job.data);
  if (!parsed.success) {
    return { ok: false, host, error: { kind: 'usage', message: `the worker on ${host} refused a job that is not one of cal's operations: ${parsed.error.issues[0]?.message ?? 'invalid'}` } };
  }
  const { operation, notAfter } = parsed.data;
  // A job first taken after its caller gave up on it is not run (nothing was sent); a job run
  // again after a crash is, as it may only settle what its first run began.
  if (notAfter !== null && Date.now() > notAfter && job.attemptsStarted <= 1 && job.stalledCounter === 0) {
    return { ok: false, host, error: { kind: 'host_unavailable', message: `the request waited past its bound before ${host} took it; nothing was sent` } };
  }
  const report = (p: JobProgress) => void job.updateProgress(p).catch(() => undefined);
  const result = await runOperation(sessions, host, operation, String(job.id), report);
  if (operation.op === 'remove' && result.ok) await forget(redis, result.value as { handle?: Handle });
  else await recordOwnership(redis, host, result);
  return result;
}

/** The handles a start created (or touched) are this host's: continues of them come here. */
async function recordOwnership(redis: import('ioredis').Redis, host: string, result: JobResult): Promise<void> {
  const value = (result.ok ? result.value : result.result) as Partial<TurnResult> | undefined;
  const handle = value?.handle as Handle | undefined;
  const id = handle?.id ?? (result.ok ? undefined : result.error.handle);
  if (typeof id !== 'string') return;
  await redis.hset(keys.handles, id, host);
  if (typeof handle?.name === 'string') await redis.hset(keys.names, handle.name, host);
}

async function forget(redis: import('ioredis').Redis, removed: { handle?: Handle }): Promise<void> {
  if (!removed.handle) return;
  await redis.hdel(keys.handles, removed.handle.id);
  if (removed.handle.name) await redis.hdel(keys.names, removed.handle.name);
}
