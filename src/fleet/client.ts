import type { Redis } from 'ioredis';
import { CalError } from '../errors.js';
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
import type { WaitOptions } from '../library/types.js';
import { waitForTurns } from '../library/wait.js';
import { connectFleet } from './connection.js';
import { FleetJobs, withHost } from './jobs.js';
import { keys, redactedUrl, type Operation } from './protocol.js';
import { isAlive } from './hosts.js';
import { lastListing, ownedBy } from './registry.js';

export { defaultHostWaitSeconds } from './jobs.js';
/** inspect and recover of every host: how long one host may take to answer before it is listed as unavailable. */
const broadcastWaitSeconds = 5;

export async function openFleetSessions(fleet: FleetOptions): Promise<Sessions> {
  const redis = await connectFleet(fleet.connection, false, fleet.password);
  return new FleetSessions(fleet.connection, redis);
}

/**
 * The library's contract through a fleet: each call becomes one job for the worker that must run
 * it (the handle's host, or any worker for a start), and its result, CalError and live output
 * come back as they would on one machine.
 */
class FleetSessions implements Sessions {
  private readonly jobs: FleetJobs;

  constructor(
    private readonly url: string,
    private readonly redis: Redis,
  ) {
    this.jobs = new FleetJobs(url, redis);
  }

  get stateDir(): string {
    return `fleet ${redactedUrl(this.url)}`;
  }

  async start(o: StartOptions): Promise<TurnResult> {
    checkStartOptions(o);
    checkMessage(o.message);
    refuseMachinePaths(o);
    refuseAborted(o.signal);
    // A worktree is a folder of one machine's repository: not something a fleet start can place.
    if (o.worktree || o.branch !== undefined) throw new CalError('usage', '--worktree runs a session in a git worktree of this machine; start it without --fleet, on the machine that holds the repository');
    const options = pick(o, ['provider', 'message', 'transport', 'name', 'replace', 'timeoutSeconds', 'cwd', 'model', 'systemPrompt', 'toolPolicy']);
    if (o.name !== undefined && o.replace) await this.replaceName(o.name, o.hostWaitSeconds);
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
    return withHost((await this.jobs.call(host, { op: 'killTmux', ref: id }, {})) as Handle, host);
  }

  async cancel(ref: HandleRef, options: CancelOptions = {}): Promise<CancelResult> {
    const id = refOf(ref);
    const host = await this.hostOf(id);
    const op = { op: 'cancel' as const, ref: id, ...(options.timeoutSeconds === undefined ? {} : { timeoutSeconds: options.timeoutSeconds }) };
    return (await this.jobs.call(host, op, {})) as CancelResult;
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
    const removed = (await this.jobs.call(host, { op: 'remove', ref: id, force: options.force === true }, {})) as RemoveResult;
    return { ...removed, handle: withHost(removed.handle, host) };
  }

  inspect(): Promise<SessionList>;
  inspect(ref: HandleRef, options?: InspectOptions): Promise<SessionDetail>;
  async inspect(ref?: HandleRef, options: InspectOptions = {}): Promise<SessionList | SessionDetail> {
    if (ref !== undefined) {
      const id = refOf(ref);
      const host = await this.hostOf(id);
      const view = (await this.jobs.call(host, { op: 'inspectOne', ref: id, screen: options.screen !== false }, {})) as SessionDetail;
      return { ...view, handle: withHost(view.handle, host) };
    }
    const list: SessionList = { handles: [], certifications: [], unreadable: [], hosts: [] };
    for (const { host, value } of await this.everyHost({ op: 'inspect' })) {
      list.hosts?.push({ host, available: value !== null });
      if (value === null) {
        // A host down: its handles as it last listed them, marked with its host (listed, never left out).
        const last = await lastListing(this.redis, host);
        if (last) list.handles.push(...last.map((h) => ({ ...h, handle: withHost(h.handle, host) })));
        const listed = new Set(last?.map((h) => h.handle.id));
        const unlisted = (await ownedBy(this.redis, host)).filter((id) => !listed.has(id));
        for (const id of unlisted) list.unreadable.push({ file: id, reason: `its host ${host} is down and left no listing of it`, name: null });
        continue;
      }
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
    const id = refOf(ref);
    const self = this;
    if (options.follow) return this.follow(id, options.signal);
    return (async function* () {
      const host = await self.hostOf(id);
      yield* (await self.jobs.call(host, { op: 'events', ref: id }, {})) as CalEvent[];
    })();
  }

  /**
   * A follow runs on the handle's host as one job that sends each event as it comes; it ends
   * when the handle is removed, when `signal` aborts or the reader stops (the job is aborted), or
   * when this process is gone (its lease in Redis is no longer renewed).
   */
  private follow(id: string, signal: AbortSignal | undefined): AsyncIterable<CalEvent> {
    const self = this;
    return (async function* () {
      const host = await self.hostOf(id);
      const stop = new AbortController();
      const onAbort = () => stop.abort();
      signal?.addEventListener('abort', onAbort, { once: true });
      const arrived: CalEvent[] = [];
      let wake: (() => void) | null = null;
      let ended: { error: unknown } | null = null;
      const call = self.jobs.call(host, { op: 'events', ref: id, follow: true }, { onEvent: (e: CalEvent) => (arrived.push(e), wake?.()), signal: stop.signal }, true).then(
        () => (ended = { error: null }),
        (error: unknown) => (ended = { error }),
      );
      void call.then(() => wake?.());
      try {
        for (;;) {
          while (arrived.length > 0) yield arrived.shift() as CalEvent;
          if (ended) break;
          await new Promise<void>((r) => (wake = r));
          wake = null;
        }
        const error = (ended as { error: unknown } | null)?.error;
        if (error && !stop.signal.aborted) throw error;
      } finally {
        signal?.removeEventListener('abort', onAbort);
        stop.abort();
        await call;
      }
    })();
  }

  wait(ref: HandleRef, options: WaitOptions & { turn?: string } = {}): Promise<TurnResult> {
    return waitForTurns((r, o) => this.inspect(r, o), [ref], options);
  }

  waitForAny(refs: readonly HandleRef[], options: WaitOptions = {}): Promise<TurnResult> {
    return waitForTurns((r, o) => this.inspect(r, o), refs, options);
  }

  async close(): Promise<void> {
    await this.jobs.close();
    this.redis.disconnect();
  }

  /**
   * `--replace` through a fleet: the handle holding the name is removed on its own host first (a
   * name is one session fleet-wide), so the start that follows finds the name free wherever it
   * lands. A holder whose host is down cannot be removed: `host_unavailable`, nothing started.
   */
  private async replaceName(name: string, hostWaitSeconds: number | undefined): Promise<void> {
    const holder = await this.redis.hget(keys.names, name);
    if (holder === null) return;
    await this.jobs.call(holder, { op: 'remove', ref: name, force: false }, hostWaitSeconds === undefined ? {} : { hostWaitSeconds });
  }

  /** The host that owns a handle (by id or name), from the fleet's records. */
  private async hostOf(ref: string): Promise<string> {
    const host = (await this.redis.hget(keys.handles, ref)) ?? (await this.redis.hget(keys.names, ref));
    if (host === null) throw new CalError('not_found', `no handle ${ref} in the fleet ${redactedUrl(this.url)}; list them with: cal inspect`, { handle: ref });
    return host;
  }

  private async turn(host: string | null, op: Operation, o: TurnCallOptions): Promise<TurnResult> {
    return (await this.jobs.call(host, op, o)) as TurnResult;
  }

  /** One operation on every known host that is up; a host down or silent past the bound gives null. */
  private async everyHost(op: Operation): Promise<Array<{ host: string; value: unknown }>> {
    const hosts = (await this.redis.smembers(keys.hosts)).sort();
    return Promise.all(
      hosts.map(async (host) => {
        if (!(await isAlive(this.redis, host))) return { host, value: null };
        try {
          return { host, value: await this.jobs.call(host, op, { hostWaitSeconds: broadcastWaitSeconds }) };
        } catch (err) {
          if (err instanceof CalError && err.kind === 'host_unavailable') return { host, value: null };
          throw err;
        }
      }),
    );
  }

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
