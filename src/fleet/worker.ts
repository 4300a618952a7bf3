import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { CalError, toCalError } from '../errors.js';
import { openLocalSessions, type LocalSessions } from '../library/sessions.js';
import type { Handle, TurnResult } from '../library/types.js';
import { DEFAULT_TIMEOUT_S } from '../sessions/execute-turn.js';
import { allowedRoots, checkAllowed } from './allowed-dirs.js';
import { connectFleet } from './connection.js';
import { runOperation } from './operations.js';
import { heartbeatMs, heartbeatTtlMs, HostName, hostQueue, JobData, keys, newSessionQueue, type JobProgress, type JobResult, type Operation, type WireError } from './protocol.js';
import { claimedElsewhere, claimName, claimStart, forget, own, releaseName, saveListing, updateClaim } from './registry.js';

export interface WorkerOptions {
  /** The fleet's Redis URL. */
  connection: string;
  /** The Redis password, when the URL gives none (so it is in no argv). */
  password?: string;
  /** The folders under which sessions may run (default: the worker's current directory). */
  allowDirs?: string[];
  /** This machine's name in the fleet: the queue of the sessions it owns. */
  host: string;
  /** New sessions this worker runs at once (default 2). */
  slots?: number;
  stateDir?: string;
  /** The environment handed to the CLIs (default: process.env); never sent anywhere. */
  env?: Record<string, string | undefined>;
  /** BullMQ's job lock: a worker silent this long counts as dead and its jobs go back to its queue (default 10 s). */
  lockMs?: number;
  /** Called once the worker takes jobs, with the folders sessions may run under. */
  onReady?: (roots: string[]) => void;
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
  const roots = allowedRoots(o.allowDirs, process.cwd());
  const sessions = await openLocalSessions({ stateDir: o.stateDir, env: o.env });
  const redis = await connectFleet(o.connection, true, o.password);
  const listing = listingKeeper(redis, sessions, o.host);
  // The host registry is renewed with the heartbeat, not written once: a Redis restarted without
  // its data learns again that this host is up, which handles and names it owns, and its listing.
  const beat = async () => {
    try {
      await redis.set(keys.alive(o.host), String(process.pid), 'PX', heartbeatTtlMs);
      if ((await redis.sadd(keys.hosts, o.host)) === 1) await listing.publish();
    } catch {
      // Redis away: the next beat tries again.
    }
  };
  // A predecessor killed mid-turn left turns open: settled from the CLIs' transcripts first.
  await sessions.recover().catch(() => undefined);
  await redis.srem(keys.hosts, o.host);
  await beat();
  const timer = setInterval(() => void beat(), heartbeatMs);

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
    const result = processJob({ sessions, redis, host: o.host, roots }, job, abort.signal).finally(() => listing.refresh());
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
  o.onReady?.(roots);
  return {
    host: o.host,
    async stop() {
      await Promise.all(workers.map((w) => w.close()));
      clearInterval(timer);
      listing.stop();
      await redis.del(keys.alive(o.host)).catch(() => undefined);
      aborts.disconnect();
      await sessions.close();
      redis.disconnect();
    },
  };
}

interface Host {
  sessions: LocalSessions;
  redis: Redis;
  host: string;
  /** The folders sessions may run under (--allow-dir). */
  roots: string[];
}

async function processJob(h: Host, job: Job, signal: AbortSignal): Promise<JobResult> {
  const { sessions, redis, host } = h;
  const parsed = JobData.safeParse(job.data);
  if (!parsed.success) {
    return { ok: false, host, error: { kind: 'usage', message: `the worker on ${host} refused a job that is not one of cal's operations: ${parsed.error.issues[0]?.message ?? 'invalid'}` } };
  }
  const { operation, notAfter } = parsed.data;
  const jobId = String(job.id);
  // A start is claimed in Redis before anything is sent: a run of the job on any other worker
  // (its first worker died, or the job was replayed) settles it from the claim, never sends again.
  if (operation.op === 'start') {
    const elsewhere = await claimStart(redis, jobId, host);
    if (elsewhere) return claimedElsewhere(redis, jobId, elsewhere, ((operation.options.timeoutSeconds ?? DEFAULT_TIMEOUT_S) + 60) * 1000);
    const result = await runStart(h, job, operation, notAfter, signal);
    await updateClaim(redis, jobId, host, { result }).catch(() => undefined);
    return result;
  }
  const refused = await refusedBeforeRun(h, job, operation, notAfter);
  if (refused) return refused;
  const report = (p: JobProgress) => {
    const owned = 'sent' in p ? own(redis, host, p.sent.handle, undefined) : Promise.resolve();
    void owned.then(() => job.updateProgress(p)).catch(() => undefined);
  };
  const lease = operation.op === 'events' && operation.follow ? followLease(redis, jobId, signal) : null;
  const result = await runOperation(sessions, host, operation, jobId, report, lease?.signal ?? signal).finally(() => lease?.stop());
  if (operation.op === 'remove' && result.ok) await forgetRemoved(redis, host, result.value as { handle?: Handle });
  else await recordOwnership(redis, host, result);
  return result;
}

/**
 * A start on this host: its name claimed fleet-wide first (a name is one session in the whole
 * fleet), its folder checked against --allow-dir; the name given back if the start did not keep it.
 */
async function runStart(h: Host, job: Job, operation: Extract<Operation, { op: 'start' }>, notAfter: number | null, signal: AbortSignal): Promise<JobResult> {
  const { sessions, redis, host } = h;
  const jobId = String(job.id);
  const refused = await refusedBeforeRun(h, job, operation, notAfter);
  if (refused) return refused;
  const name = operation.options.name;
  if (name !== undefined) {
    const holder = await claimName(redis, name, host);
    if (holder !== null) {
      const message = `a handle named ${name} already exists on host ${holder}; pick another --name, pass --replace (its host must be up), or cal remove ${name}`;
      return { ok: false, host, error: { kind: 'usage', message } };
    }
  }
  const report = (p: JobProgress) => {
    const owned = 'sent' in p ? Promise.all([own(redis, host, p.sent.handle, name), updateClaim(redis, jobId, host, { handle: p.sent.handle, turn: p.sent.turn })]) : Promise.resolve();
    void owned.then(() => job.updateProgress(p)).catch(() => undefined);
  };
  const result = await runOperation(sessions, host, operation, jobId, report, signal);
  await recordOwnership(redis, host, result);
  if (name !== undefined && !(await holdsName(sessions, name))) await releaseName(redis, name, host).catch(() => undefined);
  return result;
}

/** Why a job is not run at all (nothing sent), or null: a caller that gave up or aborted, a folder not allowed. */
async function refusedBeforeRun(h: Host, job: Job, operation: Operation, notAfter: number | null): Promise<JobResult | null> {
  const { redis, host } = h;
  const first = job.attemptsStarted <= 1 && job.stalledCounter === 0;
  // A job first taken after its caller gave up on it is not run (nothing was sent); a job run
  // again after a crash is, as it may only settle what its first run began.
  if (notAfter !== null && Date.now() > notAfter && first) {
    return { ok: false, host, error: { kind: 'host_unavailable', message: `the request waited past its bound before ${host} took it; nothing was sent` } };
  }
  if (first && (await redis.exists(keys.aborted(String(job.id)))) === 1) {
    return { ok: false, host, error: { kind: 'interrupted', message: `the call was aborted before ${host} began it; nothing was sent` } };
  }
  try {
    if (operation.op === 'start') checkAllowed(h.roots, operation.options.cwd ?? process.cwd(), host, process.cwd());
    if (operation.op === 'continue') {
      if (operation.options.cwd !== undefined) checkAllowed(h.roots, operation.options.cwd, host, process.cwd());
      const dir = await h.sessions.inspect(operation.ref, { screen: false }).then(
        (view) => view.handle.config.workingDir.realPath,
        () => null,
      );
      if (dir !== null) checkAllowed(h.roots, dir, host, process.cwd());
    }
  } catch (err) {
    return { ok: false, host, error: toCalError(err).toJSON() as WireError };
  }
  return null;
}

async function holdsName(sessions: LocalSessions, name: string): Promise<boolean> {
  const view = await sessions.inspect(name, { screen: false }).catch(() => null);
  return view !== null && view.handle.name === name;
}

/**
 * This host's listing, kept in Redis for `inspect` while the host is down (refreshed after each
 * job, at most once a second), and its ownership of every handle and name, published again when
 * Redis forgot this host.
 */
function listingKeeper(redis: Redis, sessions: LocalSessions, host: string): { refresh: () => void; publish: () => Promise<void>; stop: () => void } {
  let timer: NodeJS.Timeout | null = null;
  const write = async (withOwnership: boolean) => {
    const list = await sessions.inspect();
    const handles = list.handles.map((s) => ({ ...s, handle: { ...s.handle, host } }));
    if (withOwnership) for (const s of handles) await own(redis, host, s.handle.id, s.handle.name);
    await saveListing(redis, host, handles);
  };
  return {
    refresh() {
      timer ??= setTimeout(() => {
        timer = null;
        void write(false).catch(() => undefined);
      }, 1000);
    },
    publish: () => write(true),
    stop() {
      if (timer) clearTimeout(timer);
    },
  };
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

/** The handles a turn created (or touched) are this host's: continues of them come here. */
async function recordOwnership(redis: Redis, host: string, result: JobResult): Promise<void> {
  const value = (result.ok ? result.value : result.result) as Partial<TurnResult> | undefined;
  const handle = value?.handle as Handle | undefined;
  const id = handle?.id ?? (result.ok ? undefined : result.error.handle);
  if (typeof id !== 'string') return;
  await own(redis, host, id, handle?.name);
}

async function forgetRemoved(redis: Redis, host: string, removed: { handle?: Handle }): Promise<void> {
  if (removed.handle) await forget(redis, host, removed.handle);
}
