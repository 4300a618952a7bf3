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
  const running = new Map<string, { result: Promise<JobResult>; abort: AbortController }>();
  const processor = async (job: Job) => {
    const id = String(job.id);
    const first = running.get(id);
    if (first) return first.result;
    const abort = new AbortController();
    const result = processJob(sessions, redis, o.host, job, abort.signal);
    running.set(id, { result, abort });
    try {
      return await result;
    } finally {
      running.delete(id);
    }
  };
  // A caller's abort (Ctrl-C on its cal, the end of a follow) reaches the job it names, here.
  const aborts = redis.duplicate();
  aborts.on('error', () => undefined);
  aborts.on('message', (_channel: string, jobId: string) => running.get(jobId)?.abort.abort());
  await aborts.subscribe(keys.abort);
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
      aborts.disconnect();
      await sessions.close();
      redis.disconnect();
    },
  };
}

async function processJob(sessions: LocalSessions, redis: import('ioredis').Redis, host: string, job: Job, signal: AbortSignal): Promise<JobResult> {
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
  if (job.attemptsStarted <= 1 && job.stalledCounter === 0 && (await redis.exists(keys.aborted(String(job.id)))) === 1) {
    return { ok: false, host, error: { kind: 'interrupted', message: `the call was aborted before ${host} began it; nothing was sent` } };
  }
  // A new handle is this host's from the moment its first message left, so a detached start's
  // caller can wait for it (or cancel it) at once, before the turn ends.
  const report = (p: JobProgress) => {
    const owned = 'sent' in p ? own(redis, host, p.sent.handle, operation.op === 'start' ? operation.options.name : undefined) : Promise.resolve();
    void owned.then(() => job.updateProgress(p)).catch(() => undefined);
  };
  const lease = operation.op === 'events' && operation.follow ? followLease(redis, String(job.id), signal) : null;
  const result = await runOperation(sessions, host, operation, String(job.id), report, lease?.signal ?? signal).finally(() => lease?.stop());
  if (operation.op === 'remove' && result.ok) await forget(redis, result.value as { handle?: Handle });
  else await recordOwnership(redis, host, result);
  return result;
}

/** A follow's own signal: aborted with the job, or once its caller stopped renewing its lease. */
function followLease(redis: import('ioredis').Redis, jobId: string, signal: AbortSignal): { signal: AbortSignal; stop: () => void } {
  const own = new AbortController();
  const end = () => own.abort();
  signal.addEventListener('abort', end, { once: true });
  const timer = setInterval(() => {
    redis.exists(keys.lease(jobId)).then((n) => n === 0 && end(), () => undefined);
  }, 1000);
  const stop = () => {
    clearInterval(timer);
    signal.removeEventListener('abort', end);
  };
  return { signal: own.signal, stop };
}

async function own(redis: import('ioredis').Redis, host: string, handle: string, name: string | undefined): Promise<void> {
  await redis.hset(keys.handles, handle, host);
  if (name) await redis.hset(keys.names, name, host);
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
