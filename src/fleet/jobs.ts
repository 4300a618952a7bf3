import { randomUUID } from 'node:crypto';
import { Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import { CalError } from '../errors.js';
import { TurnError } from '../library/errors.js';
import type { CalEvent, Handle, TurnCallOptions, TurnResult } from '../library/types.js';
import { DEFAULT_TIMEOUT_S } from '../sessions/execute-turn.js';
import { anyAlive, isAlive, untilUp } from './hosts.js';
import { abortMarkMs, errorOf, hostQueue, JobProgress, JobResult, keys, leaseMs, newSessionQueue, redactedUrl, type JobData, type Operation } from './protocol.js';

/** How long a call waits for the owning host (or, for a start, any worker) to be up, unless the caller says (seconds). */
export const defaultHostWaitSeconds = 30;

interface Channel {
  queue: Queue;
  events: QueueEvents;
}

type Live = Pick<TurnCallOptions, 'onEvent' | 'onProgress' | 'onSent' | 'signal'>;

/**
 * A fleet client's jobs: one operation sent to the queue that must run it (a host's, or the new
 * sessions' one), its live output delivered as it comes, its end (value or CalError) returned;
 * a caller's abort withdraws or aborts it. docs/fleet.md.
 */
export class FleetJobs {
  private readonly channels = new Map<string, Promise<Channel>>();

  constructor(
    private readonly url: string,
    private readonly redis: Redis,
  ) {}

  /**
   * Sends one job and waits for its end. A host that is down (no heartbeat) is waited for up to
   * the caller's bound, then `host_unavailable`; a job it never took is removed, so nothing is
   * sent later that the caller was told failed.
   */
  async call(host: string | null, operation: Operation, o: TurnCallOptions & Live, lease = false): Promise<unknown> {
    try {
      return await this.send(host, operation, o, lease);
    } catch (err) {
      if (err instanceof CalError || !isConnectionError(err)) throw err;
      throw new CalError('host_unavailable', `the fleet's Redis at ${redactedUrl(this.url)} stopped answering (${err.message}); if the request was sent, it settles on its host (cal inspect shows it once Redis is back)`);
    }
  }

  private async send(host: string | null, operation: Operation, o: TurnCallOptions & Live, lease: boolean): Promise<unknown> {
    const boundMs = (o.hostWaitSeconds ?? defaultHostWaitSeconds) * 1000;
    const who = host === null ? 'every fleet worker' : `host ${host}`;
    const up = () => (host === null ? anyAlive(this.redis) : isAlive(this.redis, host));
    if (!(await untilUp(up, boundMs))) throw new CalError('host_unavailable', `${who} is unavailable: no heartbeat in Redis for the ${boundMs / 1000} s waited; nothing was sent`);
    const { queue, events } = await this.channel(host === null ? newSessionQueue : hostQueue(host));
    const jobId = randomUUID();
    const data: JobData = { operation, notAfter: Date.now() + boundMs };
    // The turn, once its host says its message left: named by a failure that ends the wait.
    const sent: { handle?: string; turn?: string } = {};
    const live: Live = { ...o, onSent: (s) => (Object.assign(sent, s), o.onSent?.(s)) };
    const settled = new Promise<JobResult>((resolve) => {
      const onProgress = ({ jobId: id, data: p }: { jobId: string; data: unknown }) => {
        if (id === jobId) deliver(p, live);
      };
      const onDone = ({ jobId: id, returnvalue }: { jobId: string; returnvalue: unknown }) => {
        if (id !== jobId) return;
        events.off('progress', onProgress as never);
        events.off('completed', onDone as never);
        resolve(JobResult.parse(typeof returnvalue === 'string' ? JSON.parse(returnvalue) : returnvalue));
      };
      events.on('progress', onProgress as never);
      events.on('completed', onDone as never);
    });
    const renew = lease ? await this.holdLease(jobId) : null;
    // Ctrl-C (the caller's signal) after the job left: a job not yet taken is withdrawn (nothing
    // was sent); one running is aborted on its host, where its turn settles as interrupted.
    const abort = { withdrawn: false, asked: false };
    const onAbort = () => {
      abort.asked = true;
      void this.abortJob(queue, jobId).then((withdrawn) => (abort.withdrawn = withdrawn));
    };
    try {
      await queue.add(operation.op, data, { jobId, attempts: 1, removeOnComplete: { age: 300 }, removeOnFail: { age: 300 } });
      o.signal?.addEventListener('abort', onAbort, { once: true });
      if (o.signal?.aborted) onAbort();
      const wait: Wait = { boundMs, deadline: turnDeadline(operation, boundMs), startedAt: Date.now(), sent };
      const result = await this.untilSettled(queue, jobId, settled, up, who, wait, abort);
      return unwrap(result);
    } finally {
      o.signal?.removeEventListener('abort', onAbort);
      if (renew) clearInterval(renew);
    }
  }

  /**
   * Waits for a job's end. A host down past the bound is `host_unavailable`; so is the fleet's
   * Redis gone past it. A Redis that comes back (restarted with its append-only file) still holds
   * the job and its end: the end event is read where the reading stopped, and the job itself is
   * read too, so a turn in flight across a restart settles once, as it would have. The job is
   * also read every second: BullMQ's event reader is "ready" before its first read of the stream,
   * and a fast job (an inspect) can end in between; its end event is then never seen.
   */
  private async untilSettled(queue: Queue, jobId: string, settled: Promise<JobResult>, up: () => Promise<boolean>, who: string, wait: Wait, abort: { withdrawn: boolean; asked: boolean }): Promise<JobResult> {
    const { boundMs, sent } = wait;
    const details = () => ({ ...(sent.handle ? { handle: sent.handle } : {}), ...(sent.turn ? { turn: sent.turn } : {}) });
    let downSince: number | null = null;
    let redisWasDown = false;
    let ticks = 0;
    for (;;) {
      const tick = new Promise<null>((r) => setTimeout(() => r(null), 200));
      const result = await Promise.race([settled, tick]);
      if (result) return result;
      if (abort.withdrawn) throw new CalError('interrupted', 'the call was aborted before its host took it; nothing was sent');
      const reachable = await up().then(
        (isUp) => ({ isUp, redis: true }),
        () => ({ isUp: false, redis: false }),
      );
      if (!reachable.redis) redisWasDown = true;
      else if (redisWasDown || ++ticks % 5 === 0) {
        const ended = await endedJob(queue, jobId);
        // A job the caller's abort is withdrawing is gone for that reason: nothing was sent.
        if (ended === 'missing' && abort.asked) throw new CalError('interrupted', 'the call was aborted before its host took it; nothing was sent');
        if (ended === 'missing') {
          // Redis restarted without its data (or evicted it): no worker will ever end this job.
          const where = sent.handle ? `handle ${sent.handle} (cal inspect ${sent.handle}; cal recover settles it)` : `${who} (cal inspect shows it; cal recover settles it)`;
          throw new CalError('host_unavailable', `the fleet's Redis at ${redactedUrl(this.url)} no longer holds this request (restarted without its data?); its answer cannot come back here: if its message was sent, the turn settles on ${where}`, details());
        }
        if (ended) return ended;
      }
      if (wait.deadline !== null && Date.now() > wait.deadline) {
        throw new CalError('timeout', `no answer from ${who} within the turn's timeout and --host-wait (${Math.round((wait.deadline - wait.startedAt) / 1000)} s); the turn, if sent, settles there (cal inspect, cal recover)`, details());
      }
      if (reachable.isUp) {
        downSince = null;
        continue;
      }
      downSince ??= Date.now();
      if (Date.now() - downSince < boundMs) continue;
      if (!reachable.redis) {
        throw new CalError('host_unavailable', `the fleet's Redis at ${redactedUrl(this.url)} went away and stayed away for ${boundMs / 1000} s; a turn already sent settles on ${who} (cal inspect shows it once Redis is back)`);
      }
      const job = await queue.getJob(jobId);
      const state = job ? await job.getState() : 'unknown';
      if (job && (state === 'waiting' || state === 'delayed' || state === 'prioritized')) await job.remove().catch(() => undefined);
      const running = state === 'active' ? '; its turn was under way and settles when the host is back (cal recover there)' : '; nothing was sent';
      throw new CalError('host_unavailable', `${who} went down and stayed down for ${boundMs / 1000} s${running}`);
    }
  }

  /** A follow's lease: renewed every second while this process reads; the job ends once it lapses. */
  private async holdLease(jobId: string): Promise<NodeJS.Timeout> {
    const renew = () => this.redis.set(keys.lease(jobId), '1', 'PX', leaseMs);
    await renew();
    return setInterval(() => void renew().catch(() => undefined), 1000);
  }

  /** Aborts a job: withdrawn if no worker took it yet (true), else its host is told to abort it (false). */
  private async abortJob(queue: Queue, jobId: string): Promise<boolean> {
    try {
      await this.redis.set(keys.aborted(jobId), '1', 'PX', abortMarkMs);
      const job = await queue.getJob(jobId);
      const state = job ? await job.getState() : 'unknown';
      if (job && (state === 'waiting' || state === 'delayed' || state === 'prioritized')) {
        const removed = await job.remove().then(
          () => true,
          () => false,
        );
        if (removed) return true;
      }
      await this.redis.publish(keys.abort, jobId);
    } catch {
      // Redis away: the mark, if written, still stops a worker from beginning the job.
    }
    return false;
  }

  private channel(name: string): Promise<Channel> {
    let pending = this.channels.get(name);
    if (!pending) {
      pending = (async () => {
        const queue = new Queue(name, { connection: this.redis });
        const events = new QueueEvents(name, { connection: this.redis.duplicate({ maxRetriesPerRequest: null }) });
        queue.on('error', () => undefined);
        events.on('error', () => undefined);
        // Listening starts at the stream's end: ready before any job is added, so no end is missed.
        await events.waitUntilReady();
        return { queue, events };
      })();
      this.channels.set(name, pending);
    }
    return pending;
  }

  async close(): Promise<void> {
    for (const pending of this.channels.values()) {
      const channel = await pending.catch(() => null);
      await channel?.events.close().catch(() => undefined);
      await channel?.queue.close().catch(() => undefined);
    }
  }
}

interface Wait {
  /** How long a host (or Redis) may stay away (ms). */
  boundMs: number;
  /** When a turn's caller stops waiting whatever happens (epoch ms), or null (a follow, a --wait for ever). */
  deadline: number | null;
  startedAt: number;
  /** The turn once its host said its message left. */
  sent: { handle?: string; turn?: string };
}

/**
 * A turn's whole wait: its --timeout (the CLI's bound on its host), plus --wait for a busy
 * handle, plus the host bound twice (to be taken, and for the answer to come back), plus a
 * margin for the host's own settling. Past it the caller ends with `timeout`, whatever Redis did.
 */
function turnDeadline(operation: Operation, boundMs: number): number | null {
  if (operation.op !== 'start' && operation.op !== 'continue') return null;
  const wait = operation.op === 'continue' ? operation.options.wait : undefined;
  if (wait === true) return null;
  const seconds = (operation.options.timeoutSeconds ?? DEFAULT_TIMEOUT_S) + (typeof wait === 'number' ? wait : 0);
  return Date.now() + seconds * 1000 + 2 * boundMs + 30_000;
}

/** ioredis's failures of a connection that went away (not a reply Redis gave). */
function isConnectionError(err: unknown): err is Error {
  return err instanceof Error && (err.name === 'MaxRetriesPerRequestError' || /Connection is closed|ECONNREFUSED|ECONNRESET|max retries per request/i.test(err.message));
}

/**
 * A job's result read from the job itself (its end event may have been missed while Redis was
 * away); null while it runs; 'missing' when Redis no longer holds it (it was added, and is kept
 * for minutes after it ends: only a Redis that lost its data loses it).
 */
async function endedJob(queue: Queue, jobId: string): Promise<JobResult | null | 'missing'> {
  try {
    const job = await queue.getJob(jobId);
    if (!job) return 'missing';
    if ((await job.getState()) !== 'completed') return null;
    const value: unknown = job.returnvalue;
    return JobResult.parse(typeof value === 'string' ? JSON.parse(value) : value);
  } catch {
    return null;
  }
}

function deliver(p: unknown, o: Live): void {
  const parsed = JobProgress.safeParse(p);
  if (!parsed.success) return;
  if ('event' in parsed.data) o.onEvent?.(parsed.data.event as unknown as CalEvent);
  else if ('sent' in parsed.data) o.onSent?.(parsed.data.sent);
  else o.onProgress?.(parsed.data.progress as never);
}

/** A job's result as the library returns it: its value, or the CalError (a TurnError with the settled records) it ended in. */
function unwrap(result: JobResult): unknown {
  if (result.ok) {
    const value = result.value as Partial<TurnResult> | null;
    if (value && typeof value === 'object' && value.handle && value.turn) return { ...value, handle: withHost(value.handle as Handle, result.host) };
    return result.value;
  }
  const settled = result.result as TurnResult | undefined;
  if (settled?.handle && settled.turn) throw new TurnError({ ...settled, handle: withHost(settled.handle, result.host) });
  throw errorOf(result.error);
}

export function withHost(handle: Handle, host: string): Handle {
  return { ...handle, host };
}
