import { CalError } from '../errors.js';
import { certIds } from '../certify/types.js';
import { AgentSessions, type StartRequest } from '../sessions/agent-sessions.js';
import { resolveStateDir } from '../state/paths.js';
import { StateStore, type EventRecord } from '../state/store.js';
import { terminalStatuses } from '../state/turns.js';
import { CertificationError, completedOrThrow } from './errors.js';
import { handleEvents } from './events.js';
import { checkAskOptions, checkContinueOptions, checkStartOptions } from './options.js';
import { checkHistory, checkMessage, recordedConversation, splitHistory } from './history.js';
import type {
  AskOptions,
  CalEvent,
  CancelOptions,
  CancelResult,
  CertId,
  CertifyOptions,
  CertifyResult,
  ContinueOptions,
  EventsOptions,
  Handle,
  HandleRef,
  InspectOptions,
  OpenOptions,
  RecoverOptions,
  RecoverResult,
  ReapOptions,
  RemoveOptions,
  RemoveResult,
  SessionDetail,
  SessionList,
  Sessions,
  StartOptions,
  TurnCallOptions,
  TurnResult,
  WaitOptions,
} from './types.js';
import { waitForTurns } from './wait.js';

/**
 * The library: the continuation contract for TypeScript programs, on top of the agent-session
 * layer. The CLI's commands call this same object (parse, call, render), so the two cannot drift.
 */
export async function openSessions(options: OpenOptions = {}): Promise<Sessions> {
  const env = definedEnv(options.env ?? process.env);
  const fleet = options.fleet ?? (env.CAL_FLEET ? { connection: env.CAL_FLEET } : undefined);
  if (fleet) {
    // Loaded only for a fleet: a call on one machine never loads BullMQ (docs/fleet.md).
    const { openFleetSessions } = await import('../fleet/client.js');
    const password = fleet.password ?? env.CAL_FLEET_PASSWORD;
    return openFleetSessions({ ...fleet, ...(password ? { password } : {}) });
  }
  return openLocalSessions({ ...options, env });
}

/**
 * The sessions of this machine's state directory, whatever CAL_FLEET says: what a fleet worker
 * runs its jobs on. Its tagged calls mark the turn they create, so a job run again finds it.
 */
export async function openLocalSessions(options: Omit<OpenOptions, 'fleet'> = {}): Promise<LocalSessions> {
  const env = definedEnv(options.env ?? process.env);
  const store = await StateStore.open(resolveStateDir(options.stateDir, env));
  return new CalSessions(store, env);
}

export interface LocalSessions extends Sessions {
  /** `start`, its turn tagged with `tag` (a correlation id). */
  startTagged(options: StartOptions, tag: string): Promise<TurnResult>;
  /** `continue`, its turn tagged with `tag`. */
  continueTagged(ref: HandleRef, message: string, options: ContinueOptions, tag: string): Promise<TurnResult>;
  /** The turn tagged with `tag` on any handle (the newest), with its handle, or null if none was ever created. */
  findTagged(tag: string): Promise<TurnResult | null>;
  /**
   * The turn tagged with `tag`, left open by a call of this process that stopped waiting for it
   * (a timeout), is no longer this process's: `recover` settles it, as it does a turn whose cal
   * exited. A long-lived process (a fleet worker) calls it when its call ends.
   */
  releaseTagged(tag: string): Promise<void>;
}

type SessionProgress = NonNullable<StartRequest['onProgress']>;

class CalSessions implements LocalSessions {
  private readonly agents: AgentSessions;

  constructor(
    private readonly store: StateStore,
    private readonly env: Record<string, string>,
  ) {
    this.agents = new AgentSessions(store);
  }

  get stateDir(): string {
    return this.store.layout.root;
  }

  startTagged(o: StartOptions, tag: string): Promise<TurnResult> {
    return this.start(o, tag);
  }

  continueTagged(ref: HandleRef, message: string, o: ContinueOptions, tag: string): Promise<TurnResult> {
    return this.continue(ref, message, o, tag);
  }

  async findTagged(tag: string): Promise<TurnResult | null> {
    for (const handle of await this.store.listHandles()) {
      const turn = (await this.store.listTurns(handle.id)).filter((t) => t.correlationId === tag).at(-1);
      if (turn) return { handle, turn };
    }
    return null;
  }

  async releaseTagged(tag: string): Promise<void> {
    const found = await this.findTagged(tag);
    if (!found || terminalStatuses.has(found.turn.status) || found.turn.ownerPid !== process.pid) return;
    await this.store.saveTurn({ ...found.turn, ownerPid: null, ownerStartTime: null });
  }

  async close(): Promise<void> {
    // Nothing to close on one machine: the state directory holds no open connection.
  }

  async start(o: StartOptions, tag?: string): Promise<TurnResult> {
    checkStartOptions(o);
    if (o.branch !== undefined && o.worktree !== true) throw new CalError('usage', 'a branch is for a session in its own worktree: pass --worktree (worktree: true) with it');
    checkMessage(o.message);
    refuseAborted(o.signal);
    let result: Awaited<ReturnType<AgentSessions['start']>>;
    try {
      result = await this.startSession(o, tag);
    } catch (err) {
      if (err instanceof CalError && err.handle && o.name !== undefined) await this.releaseName(err.handle, err.kind, o.onEvent as EventSink);
      throw err;
    }
    if (result.turn.status !== 'completed' && o.name !== undefined) await this.releaseName(result.handle.id, result.turn.status, o.onEvent as EventSink);
    return completedOrThrow(result);
  }

  /**
   * A start whose first turn did not complete gives its name back, so the same command can run
   * again; the handle stays under its id (inspect it, continue it, or remove it). A turn that
   * timed out or is busy is not over (the CLI may still finish it), so it keeps the name.
   */
  private async releaseName(handleId: string, ending: string, onEvent: EventSink): Promise<void> {
    if (ending === 'timeout' || ending === 'busy') return;
    const handle = await this.store.loadHandle(handleId).catch(() => null);
    if (!handle || handle.name === null) return;
    await this.store.saveHandle({ ...handle, name: null });
    await this.agents.workflowEvent(handle.id, 'name_released', { name: handle.name, reason: ending }, onEvent);
  }

  private startSession(o: StartOptions, tag: string | undefined): ReturnType<AgentSessions['start']> {
    return this.agents.start({
      ...(tag === undefined ? {} : { correlationId: tag }),
      provider: o.provider,
      message: o.message,
      cwd: o.cwd,
      model: o.model,
      transport: o.transport,
      name: o.name,
      systemPrompt: o.systemPrompt,
      mcpConfig: o.mcpConfig,
      toolPolicy: o.toolPolicy,
      cliPath: o.cliPath,
      ...(o.worktree ? { worktree: o.branch === undefined ? {} : { branch: o.branch } } : {}),
      acpCommand: o.acpCommand,
      ...(o.trustWorkingDir === false ? { trustWorkingDir: false } : {}),
      timeoutSeconds: o.timeoutSeconds,
      replace: o.replace,
      env: this.env,
      ...callbacks(o),
      ...withSignal(o.signal),
    });
  }

  async continue(ref: HandleRef, message: string, o: ContinueOptions = {}, tag?: string): Promise<TurnResult> {
    checkContinueOptions(o);
    const handleRef = refOf(ref);
    checkMessage(message);
    refuseAborted(o.signal);
    const result = await this.agents.continue({
      ...(tag === undefined ? {} : { correlationId: tag }),
      ref: handleRef,
      message,
      cwd: o.cwd,
      model: o.model,
      systemPrompt: o.systemPrompt,
      mcpConfig: o.mcpConfig,
      toolPolicy: o.toolPolicy,
      acpCommand: o.acpCommand,
      transport: o.transport,
      ...(o.trustWorkingDir === false ? { trustWorkingDir: false } : {}),
      waitSeconds: waitSeconds(o.wait),
      timeoutSeconds: o.timeoutSeconds,
      env: this.env,
      ...callbacks(o),
      ...withSignal(o.signal),
    });
    return completedOrThrow(result);
  }

  /**
   * No handle: a new session. A handle: its recorded conversation must be the caller's earlier
   * messages, and only the newest user message goes on (a native session holds the rest; an
   * API session continues from its managed copy). Never a replay.
   */
  async ask(o: AskOptions): Promise<TurnResult> {
    checkAskOptions(o);
    const { earlier, newMessage } = splitHistory(o.messages);
    if (o.handle === undefined || o.handle === null) {
      if (earlier.length > 0) {
        throw new CalError('usage', `ask() without a handle starts a new session, which holds none of the ${earlier.length} earlier messages; pass the handle they belong to, or only the new message`);
      }
      if (!o.provider) throw new CalError('usage', 'ask() without a handle starts a new session: provider is required');
      return this.start({ ...o, provider: o.provider, message: newMessage });
    }
    const handle = await this.store.loadHandle(refOf(o.handle));
    try {
      if (o.provider !== undefined && o.provider !== handle.provider.provider) {
        throw new CalError('stale_handle', `stale handle: provider differs (expected ${JSON.stringify(handle.provider.provider)}, got ${JSON.stringify(o.provider)})`, {
          field: 'provider',
          expected: handle.provider.provider,
          actual: o.provider,
          handle: handle.id,
        });
      }
      checkHistory(earlier, recordedConversation(await this.store.listTurns(handle.id)), handle.id);
    } catch (err) {
      if (err instanceof CalError && err.kind === 'stale_handle') {
        await this.agents.workflowEvent(handle.id, 'stale_handle', { field: err.field, expected: clipped(err.expected), actual: clipped(err.actual) }, o.onEvent as EventSink);
      }
      throw err;
    }
    return this.continue(handle.id, newMessage, o);
  }

  async killTmux(ref: HandleRef): Promise<Handle> {
    return this.agents.killTmux(refOf(ref));
  }

  async reap(options: ReapOptions = {}) {
    return this.agents.reap({ idleSeconds: options.idleSeconds, maxLive: options.maxLive, dryRun: options.dryRun, onEvent: options.onEvent as EventSink });
  }

  async remove(ref: HandleRef, options: RemoveOptions = {}): Promise<RemoveResult> {
    return this.agents.remove(refOf(ref), options.force === true);
  }

  inspect(): Promise<SessionList>;
  inspect(ref: HandleRef, options?: InspectOptions): Promise<SessionDetail>;
  async inspect(ref?: HandleRef, options: InspectOptions = {}): Promise<SessionList | SessionDetail> {
    if (ref === undefined) {
      const handles = await this.agents.list();
      // Certification records are loaded by the calls that show them, not on every start or continue.
      const { listCertifications } = await import('../certify/results.js');
      return { handles, certifications: await listCertifications(this.stateDir), unreadable: await this.store.unreadableHandles() };
    }
    const handleRef = refOf(ref);
    const view = await this.agents.describe(handleRef);
    const { provider, cli } = view.handle.provider;
    const { listCertifications } = await import('../certify/results.js');
    const certification = cli ? (await listCertifications(this.stateDir)).filter((c) => c.provider === provider && c.version === cli.version) : [];
    const alive = view.currentPaneAlive;
    const screen = alive && options.screen !== false ? await this.agents.screen(handleRef).catch(() => null) : null;
    const attach = alive ? await this.agents.attachCommand(handleRef) : null;
    return { ...view, screen, attach, certification };
  }

  wait(ref: HandleRef, options: WaitOptions & { turn?: string } = {}): Promise<TurnResult> {
    return waitForTurns((r, o) => this.inspect(r, o), [ref], options);
  }

  waitForAny(refs: readonly HandleRef[], options: WaitOptions = {}): Promise<TurnResult> {
    return waitForTurns((r, o) => this.inspect(r, o), refs, options);
  }

  /** Turns first (from the CLI transcripts), then the plan runs they belong to, from the phase they reached. */
  async recover(o: RecoverOptions = {}): Promise<RecoverResult> {
    refuseAborted(o.signal);
    const onEvent = o.onEvent as EventSink;
    const turns = await this.agents.recover({ dryRun: o.dryRun, retryLost: o.retryLost, timeoutSeconds: o.timeoutSeconds, env: this.env, onEvent, ...withSignal(o.signal) });
    const { recoverRuns } = await import('../workflow/runner.js');
    const runs = await recoverRuns(this.store, this.agents, { env: this.env, dryRun: o.dryRun, onEvent });
    return { dryRun: Boolean(o.dryRun), turns, runs };
  }

  async attach(ref: HandleRef): Promise<number> {
    return this.agents.attach(refOf(ref));
  }

  async cancel(ref: HandleRef, o: CancelOptions = {}): Promise<CancelResult> {
    return this.agents.cancel(refOf(ref), { env: this.env, timeoutSeconds: o.timeoutSeconds, onEvent: o.onEvent as EventSink });
  }

  async certify(o: CertifyOptions): Promise<CertifyResult> {
    const only = o.only === undefined ? null : checkCertIds(o.only);
    const { certify } = await import('../certify/runner.js');
    const report = await certify({
      provider: o.provider,
      cliPath: o.cliPath,
      only,
      live: o.live === true,
      env: this.env,
      jobs: o.jobs,
      turnTimeoutSeconds: o.turnTimeoutSeconds,
      keep: o.keep,
      onStart: o.onStart,
      onOutcome: o.onOutcome,
    });
    const { saveCertification } = await import('../certify/results.js');
    const result = { report, savedTo: await saveCertification(this.stateDir, report) };
    if (!report.passed) throw new CertificationError(result);
    return result;
  }

  events(ref: HandleRef, options: EventsOptions = {}): AsyncIterable<CalEvent> {
    return handleEvents(this.store, refOf(ref), options);
  }
}

/** Certification ids, checked: unknown ones are a usage error naming the known ones. */
export function checkCertIds(ids: readonly string[]): CertId[] {
  const unknown = ids.filter((id) => !(certIds as readonly string[]).includes(id));
  if (unknown.length > 0) throw new CalError('usage', `unknown certification id${unknown.length === 1 ? '' : 's'} ${unknown.join(', ')}; known: ${certIds.join(', ')}`);
  return [...new Set(ids)] as CertId[];
}

type EventSink = ((e: EventRecord) => void) | undefined;

/** A message as an event shows it: its role and the start of its text (the turn records keep all of it). */
function clipped(message: unknown): unknown {
  if (!message || typeof message !== 'object') return message;
  const { role, content } = message as { role: string; content: string };
  return { role, content: content.length > 200 ? `${content.slice(0, 200)}…` : content };
}

function refOf(ref: HandleRef): string {
  if (typeof ref === 'string') return ref;
  if (ref && typeof ref.id === 'string') return ref.id;
  throw new CalError('usage', 'a handle reference is a handle id, a name, or a handle');
}

function definedEnv(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

function waitSeconds(wait: boolean | number | undefined): number | undefined {
  if (wait === undefined || wait === false) return undefined;
  if (wait === true) return Infinity;
  if (typeof wait !== 'number' || Number.isNaN(wait) || wait <= 0) throw new CalError('usage', `wait takes true or a positive number of seconds, not ${JSON.stringify(wait)}`);
  return wait;
}

function refuseAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new CalError('interrupted', 'the call was aborted before anything was sent');
}

/**
 * The abort signal for the agent-session layer. Passed as a spread so it type-checks whether or
 * not that layer's request types declare `signal` yet; the layer settles the turn and releases
 * the lock when it fires.
 */
function withSignal(signal: AbortSignal | undefined): { signal?: AbortSignal } {
  return signal ? { signal } : {};
}

/** The caller's callbacks, in the library's shapes (events as recorded, progress flattened). */
function callbacks(o: TurnCallOptions): { onEvent?: (e: EventRecord) => void; onProgress?: SessionProgress; onSent?: TurnCallOptions['onSent'] } {
  const onProgress = o.onProgress;
  return {
    onEvent: o.onEvent as EventSink,
    ...(o.onSent ? { onSent: o.onSent } : {}),
    onProgress: onProgress ? (p) => onProgress({ phase: p.observation.phase, tools: p.tools, partialAnswer: p.partialAnswer }) : undefined,
  };
}
