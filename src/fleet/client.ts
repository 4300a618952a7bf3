import { randomUUID } from 'node:crypto';
import { Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import { CalError } from '../errors.js';
import { TurnError } from '../library/errors.js';
import { checkHistory, checkMessage, recordedConversation, splitHistory } from '../library/history.js';
import { checkAskOptions, checkContinueOptions, checkStartOptions } from '../library/options.js';
import type {
  AskOptions,
  CalEvent,
  CancelOptions,
  CancelResult,
  CertifyResult,
  ContinueOptions,
  EventsOptions,
  FleetOptions,
  Handle,
  HandleRef,
  InspectOptions,
  RecoverOptions,
  RecoverResult,
  RemoveOptions,
  RemoveResult,
  SessionDetail,
  SessionList,
  Sessions,
  StartOptions,
  TurnCallOptions,
  TurnResult,
} from '../library/types.js';
import { connectFleet } from './connection.js';
import { errorOf, hostQueue, JobProgress, JobResult, keys, newSessionQueue, redactedUrl, type JobData, type Operation } from './protocol.js';
import { anyAlive, isAlive, untilUp } from './hosts.js';

/** How long a call waits for the owning host (or, for a start, any worker) to be up, unless the caller says (seconds). */
export const defaultHostWaitSeconds = 30;
/** inspect and recover of every host: how long one host may take to answer before it is listed as unavailable. */
const broadcastWaitSeconds = 5;

export async function openFleetSessions(fleet: FleetOptions): Promise<Sessions> {
  const redis = await connectFleet(fleet.connection, false);
  return new FleetSessions(fleet.connection, redis);
}

interface Channel {
  queue: Queue;
  events: QueueEvents;
}

type Live = Pick<TurnCallOptions, 'onEvent' | 'onProgress'>;

/**
 * The library's contract through a fleet: each call becomes one job for the worker that must run
 * it (the handle's host, or any worker for a start), and its result, CalError and live output
 * come back as they would on one machine.
 */
class FleetSessions implements Sessions {
  private readonly channels = new Map<string, Promise<Channel>>();

  constructor(
    private readonly url: string,
    private readonly redis: Redis,
  ) {}

  get stateDir(): string {
    return `fleet ${redactedUrl(this.url)}`;
  }

  async start(o: StartOptions): Promise<TurnResult> {
    checkStartOptions(o);
    checkMessage(o.message);
    refuseMachinePaths(o);
    refuseAborted(o.signal);
    const options = pick(o, ['provider', 'message', 'transport', 'name', 'replace', 'timeoutSeconds', 'cwd', 'model', 'systemPrompt', 'toolPolicy']);
    return this.turn(null, { op: 'start', options: options as Extract<Operation, { op: 'start' }>['options'] }, o);
  }

  async continue(ref: HandleRef, message: string, o: ContinueOptions = {}): Promise<TurnResult> {
    checkContinueOptions(o);
    checkMessage(message);
    refuseMachinePaths(o);
    refuseAborted(o.signal);
    const id = refOf(ref);
    const options = pick(o, ['transport', 'wait', 'timeoutSeconds', 'cwd', 'model', 'systemPrompt', 'toolPolicy']);
    return this.turn(await this.hostOf(id), { op: 'continue', ref: id, message, options }, o);
  }

  async ask(o: AskOptions): Promise<TurnResult> {
    checkAskOptions(o);
    const { earlier, newMessage } = splitHistory(o.messages);
    if (o.handle === undefined || o.handle === null) {
      if (earlier.length > 0) throw new CalError('usage', `ask() without a handle starts a new session, which holds none of the ${earlier.length} earlier messages; pass the handle they belong to, or only the new message`);
      if (!o.provider) throw new CalError('usage', 'ask() without a handle starts a new session: provider is required');
      return this.start({ ...o, provider: o.provider, message: newMessage });
    }
    const view = await this.inspect(o.handle, { screen: false });
    if (o.provider !== undefined && o.provider !== view.handle.provider.provider) {
      throw new CalError('stale_handle', `stale handle: provider differs (expected ${JSON.stringify(view.handle.provider.provider)}, got ${JSON.stringify(o.provider)})`, {
        field: 'provider',
        expected: view.handle.provider.provider,
        actual: o.provider,
        handle: view.handle.id,
      });
    }
    checkHistory(earlier, recordedConversation(view.turns), view.handle.id);
    return this.continue(view.handle.id, newMessage, o);
  }

  async killTmux(ref: HandleRef): Promise<Handle> {
    const id = refOf(ref);
    const host = await this.hostOf(id);
    return withHost((await this.call(host, { op: 'killTmux', ref: id }, {})) as Handle, host);
  }

  async cancel(ref: HandleRef, options: CancelOptions = {}): Promise<CancelResult> {
    const id = refOf(ref);
    const host = await this.hostOf(id);
    const op = { op: 'cancel' as const, ref: id, ...(options.timeoutSeconds === undefined ? {} : { timeoutSeconds: options.timeoutSeconds }) };
    return (await this.call(host, op, {})) as CancelResult;
  }

  /** Each worker ends its own idle panes by its policy when its turns end (docs/reaping.md). */
  async reap(): Promise<import('../sessions/reaping.js').ReapItem[]> {
    throw new CalError('non_applicable', 'through a fleet each worker reaps its own idle panes by its policy; run cal reap on the worker\'s machine, with its --state-dir');
  }

  /** A pane lives on its host: a terminal here cannot attach to it. */
  async attach(ref: HandleRef): Promise<number> {
    const id = refOf(ref);
    const host = await this.hostOf(id);
    throw new CalError('non_applicable', `handle ${id} lives on host ${host}: attach there (cal attach ${id} on that machine, with its worker's --state-dir)`);
  }

  async remove(ref: HandleRef, options: RemoveOptions = {}): Promise<RemoveResult> {
    const id = refOf(ref);
    const host = await this.hostOf(id);
    const removed = (await this.call(host, { op: 'remove', ref: id, force: options.force === true }, {})) as RemoveResult;
    return { ...removed, handle: withHost(removed.handle, host) };
  }

  inspect(): Promise<SessionList>;
  inspect(ref: HandleRef, options?: InspectOptions): Promise<SessionDetail>;
  async inspect(ref?: HandleRef, options: InspectOptions = {}): Promise<SessionList | SessionDetail> {
    if (ref !== undefined) {
      const id = refOf(ref);
      const host = await this.hostOf(id);
      const view = (await this.call(host, { op: 'inspectOne', ref: id, screen: options.screen !== false }, {})) as SessionDetail;
      return { ...view, handle: withHost(view.handle, host) };
    }
    const list: SessionList = { handles: [], certifications: [], unreadable: [], hosts: [] };
    for (const { host, value } of await this.everyHost({ op: 'inspect' })) {
      list.hosts?.push({ host, available: value !== null });
      if (value === null) continue;
      const one = value as SessionList;
      list.handles.push(...one.handles.map((h) => ({ ...h, handle: withHost(h.handle, host) })));
      list.certifications.push(...one.certifications);
      list.unreadable.push(...one.unreadable);
    }
    return list;
  }

  async recover(o: RecoverOptions = {}): Promise<RecoverResult> {
    refuseAborted(o.signal);
    const out: RecoverResult = { dryRun: Boolean(o.dryRun), turns: [], runs: [] };
    for (const { value } of await this.everyHost({ op: 'recover', dryRun: Boolean(o.dryRun), retryLost: Boolean(o.retryLost), ...(o.timeoutSeconds ? { timeoutSeconds: o.timeoutSeconds } : {}) })) {
      if (value === null) continue;
      out.turns.push(...(value as RecoverResult).turns);
      out.runs.push(...(value as RecoverResult).runs);
    }
    return out;
  }

  async certify(): Promise<CertifyResult> {
    throw new CalError('usage', 'certify runs on the machine whose CLI it certifies, not through the fleet: run it there without --fleet');
  }

  events(ref: HandleRef, options: EventsOptions = {}): AsyncIterable<CalEvent> {
    if (options.follow) throw new CalError('usage', 'following events through the fleet is not supported yet: run cal events without --follow, or with --follow on the handle\'s host');
    const id = refOf(ref);
    const self = this;
    return (async function* () {
      const host = await self.hostOf(id);
      yield* (await self.call(host, { op: 'events', ref: id }, {})) as CalEvent[];
    })();
  }

  async close(): Promise<void> {
    for (const pending of this.channels.values()) {
      const channel = await pending.catch(() => null);
      await channel?.events.close().catch(() => undefined);
      await channel?.queue.close().catch(() => undefined);
    }
    this.redis.disconnect();
  }

  /** The host that owns a handle (by id or name), from the fleet's records. */
  private async hostOf(ref: string): Promise<string> {
    const host = (await this.redis.hget(keys.handles, ref)) ?? (await this.redis.hget(keys.names, ref));
    if (host === null) throw new CalError('not_found', `no handle ${ref} in the fleet ${redactedUrl(this.url)}; list them with: cal inspect`, { handle: ref });
    return host;
  }

  private async turn(host: string | null, op: Operation, o: TurnCallOptions): Promise<TurnResult> {
    return (await this.call(host, op, o)) as TurnResult;
  }

  /** One operation on every known host that is up; a host down or silent past the bound gives null. */
  private async everyHost(op: Operation): Promise<Array<{ host: string; value: unknown }>> {
    const hosts = (await this.redis.smembers(keys.hosts)).sort();
    return Promise.all(
      hosts.map(async (host) => {
        if (!(await isAlive(this.redis, host))) return { host, value: null };
        try {
          return { host, value: await this.call(host, op, { hostWaitSeconds: broadcastWaitSeconds }) };
        } catch (err) {
          if (err instanceof CalError && err.kind === 'host_unavailable') return { host, value: null };
          throw err;
        }
      }),
    );
  }

  /**
   * Sends one job and waits for its end. A host that is down (no heartbeat) is waited for up to
   * the caller's bound, then `host_unavailable`; a job it never took is removed, so nothing is
   * sent later that the caller was told failed.
   */
  private async call(host: string | null, operation: Operation, o: TurnCallOptions & Live): Promise<unknown> {
    const boundMs = (o.hostWaitSeconds ?? defaultHostWaitSeconds) * 1000;
    const who = host === null ? 'every fleet worker' : `host ${host}`;
    const up = () => (host === null ? anyAlive(this.redis) : isAlive(this.redis, host));
    if (!(await untilUp(up, boundMs))) throw new CalError('host_unavailable', `${who} is unavailable: no heartbeat in Redis for the ${boundMs / 1000} s waited; nothing was sent`);
    const { queue, events } = await this.channel(host === null ? newSessionQueue : hostQueue(host));
    const jobId = randomUUID();
    const data: JobData = { operation, notAfter: Date.now() + boundMs };
    const settled = new Promise<JobResult>((resolve) => {
      const onProgress = ({ jobId: id, data: p }: { jobId: string; data: unknown }) => {
        if (id === jobId) deliver(p, o);
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
    await queue.add(operation.op, data, { jobId, attempts: 1, removeOnComplete: { age: 300 }, removeOnFail: { age: 300 } });
    const result = await this.untilSettled(queue, jobId, settled, up, who, boundMs);
    return unwrap(result);
  }

  private async untilSettled(queue: Queue, jobId: string, settled: Promise<JobResult>, up: () => Promise<boolean>, who: string, boundMs: number): Promise<JobResult> {
    let downSince: number | null = null;
    for (;;) {
      const tick = new Promise<null>((r) => setTimeout(() => r(null), 500));
      const result = await Promise.race([settled, tick]);
      if (result) return result;
      if (await up()) {
        downSince = null;
        continue;
      }
      downSince ??= Date.now();
      if (Date.now() - downSince < boundMs) continue;
      const job = await queue.getJob(jobId);
      const state = job ? await job.getState() : 'unknown';
      if (job && (state === 'waiting' || state === 'delayed' || state === 'prioritized')) await job.remove().catch(() => undefined);
      const running = state === 'active' ? '; its turn was under way and settles when the host is back (cal recover there)' : '; nothing was sent';
      throw new CalError('host_unavailable', `${who} went down and stayed down for ${boundMs / 1000} s${running}`);
    }
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
}

function deliver(p: unknown, o: Live): void {
  const parsed = JobProgress.safeParse(p);
  if (!parsed.success) return;
  if ('event' in parsed.data) o.onEvent?.(parsed.data.event as unknown as CalEvent);
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

function withHost(handle: Handle, host: string): Handle {
  return { ...handle, host };
}

/** Paths that name something to run on the worker's machine are the worker's to set, not a caller's. */
function refuseMachinePaths(o: { cliPath?: string; mcpConfig?: string }): void {
  if (o.cliPath !== undefined) throw new CalError('usage', 'cliPath names an executable on the worker\'s machine: through the fleet it is not accepted (put the CLI on the worker\'s PATH)');
  if (o.mcpConfig !== undefined) throw new CalError('usage', 'mcpConfig names a file whose servers run on the worker\'s machine: through the fleet it is not accepted');
}

function refuseAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new CalError('interrupted', 'the call was aborted before anything was sent');
}

function refOf(ref: HandleRef): string {
  if (typeof ref === 'string') return ref;
  if (ref && typeof ref.id === 'string') return ref.id;
  throw new CalError('usage', 'a handle reference is a handle id, a name, or a handle');
}

function pick<T extends object, K extends keyof T>(o: T, names: readonly K[]): Pick<T, K> {
  const out = {} as Pick<T, K>;
  for (const k of names) if (o[k] !== undefined) out[k] = o[k];
  return out;
}
