import { timingMark } from '../util/timing.js';
import { randomUUID } from '../util/random.js';
import path from 'node:path';
import { loadApiAdapter, loadCliAdapter } from '../adapters/registry.js';
import type { CliAdapter, StartedStructuredTurn } from '../adapters/types.js';
import { preflight } from '../engine/decision.js';
import { checkMcpConfig } from '../engine/mcp-config.js';
import { prepareMessage } from '../engine/message.js';
import { wellFormedMessage } from '../util/well-formed.js';
import { dirIdentity, hashFile, sha256 } from '../engine/stability.js';
import { checkStability } from '../engine/stability.js';
import { startStructuredTurn } from '../engine/structured-continuation.js';
import { discardEarlyLaunch } from '../adapters/early-launch.js';
import type { TmuxFactory } from '../engine/tmux-control.js';
import { attachArgv, attachTerminal, killPaneNamed, killTransport, pressKeys, realTmux, shutdownTransports, transportAlive, transportsAlive, transportScreen } from '../engine/transport.js';
import { CalError, toCalError } from '../errors.js';
import { AgentSessionHandle, HANDLE_SCHEMA_VERSION, HandleName, type ProviderHandle, type ProviderName } from '../handles/schema.js';
import type { HeldLock } from '../state/lock.js';
import { newId, type StateStore } from '../state/store.js';
import type { TurnRecord } from '../state/turns.js';
import { historyFile } from './api-history.js';
import { handleLockName, sessionConfig, sessionContext, type SessionContext } from './context.js';
import { executeTurn, nextPaneName } from './execute-turn.js';
import { tmuxSocketFor } from '../engine/tmux-socket.js';
import { recover, settleEarlierTurns } from './recovery.js';
import { removeHandle, type RemoveResult } from './remove-handle.js';
import { createWorktree, releaseWorktree } from '../git/worktree.js';
import { reapAfterTurn, reapLimits, reapPanes, type ReapItem } from './reaping.js';
import { endFailedStart } from './retire-pane.js';
import { readReapPolicy, readTrustWorkingDir } from '../state/config.js';
import { newTurn } from './turn-journal.js';
import { checkToolPolicy, nameTaken, refuseOtherTransport, resolveSessionCli } from './request-checks.js';
import { checkAcpCommand } from '../adapters/acp-command.js';
import { cancelTurn, watchCancelRequests } from './cancel-turn.js';
import type { CancelOutcome, ContinueRequest, ExecOptions, HandleSummary, HandleView, RecoverItem, RecoverRequest, StartRequest, TurnResult } from './types.js';

export type { RemoveResult } from './remove-handle.js';
export type { ReapItem } from './reaping.js';
export type { CancelOutcome, ContinueRequest, HandleSummary, HandleView, PaneView, RecoverAction, RecoverItem, RecoverRequest, StartRequest, TurnResult } from './types.js';
export { handleLockName } from './context.js';

/**
 * The agent-session layer: "continue this session with this message". Owns handles, the
 * stability fingerprint, one continuation per handle, turn records and lifecycle events. How the
 * message reaches the session (paste, native resume, a fresh launch, a structured run) is the
 * engine's decision (engine/decision.ts); this layer never asks "start or resume".
 */
export class AgentSessions {
  private readonly ctx: SessionContext;

  /** deps: how tmux and the CLI adapters are reached (the real ones unless a test gives fakes). */
  constructor(private readonly store: StateStore, deps: { tmux?: TmuxFactory; adapter?: (name: ProviderName) => CliAdapter | Promise<CliAdapter> } = {}) {
    this.ctx = sessionContext(store, deps.tmux ?? realTmux, deps.adapter ?? loadCliAdapter);
  }

  async start(request: StartRequest): Promise<TurnResult> {
    // Every caller's message (command line, library, plan) is made well-formed here, once.
    const req = { ...request, message: wellFormedMessage(request.message) };
    const api = await loadApiAdapter(req.provider);
    const adapter = api ? null : await this.ctx.adapter(req.provider);
    // A CLI cal drives only through its JSON mode (Cursor, Agy) starts there without being told.
    const transport = req.transport ?? (api ? 'api' : adapter && !adapter.structured && adapter.acp ? 'acp' : adapter && !adapter.capabilities.tmuxContinuation && adapter.structured ? 'structured' : 'tmux');
    if (api && transport !== 'api') throw new CalError('usage', `${req.provider} is an API provider: it only has --transport api`);
    if (!api && transport === 'api') throw new CalError('usage', `${req.provider} is a coding-agent CLI; --transport api is for the API providers (anthropic, openai)`);
    if (adapter && transport === 'structured' && !adapter.structured) {
      throw new CalError('usage', `${req.provider} has no structured transport in cal; use --transport tmux`);
    }
    if (adapter && transport === 'acp' && !adapter.acp) throw new CalError('usage', `${req.provider} has no ACP mode in cal; use --transport ${adapter.structured ? 'structured' : 'tmux'}`);
    if (adapter && transport === 'tmux' && !adapter.capabilities.tmuxContinuation) {
      throw new CalError('usage', `${req.provider} has no tmux transport in cal (its transcript cannot prove a turn's end without the pane); use --transport structured`);
    }
    if (api && req.mcpConfig) throw new CalError('usage', `${req.provider} is an API provider: --mcp-config applies to coding-agent CLIs`);
    const toolPolicy = checkToolPolicy(req.toolPolicy, adapter, req.provider);
    api?.checkEnv(req.env);
    if (adapter) prepareMessage(adapter, transport, req.message);
    if (req.name !== undefined && !HandleName.safeParse(req.name).success) {
      throw new CalError('usage', `invalid --name ${JSON.stringify(req.name)}: letters, digits, '.', '_', '-'`);
    }
    // Checked early for a quick answer, and again under the names lock when the handle is saved.
    if (req.name !== undefined && !req.replace && (await this.store.isNameTaken(req.name))) throw nameTaken(req.name);
    if (api && req.worktree) throw new CalError('usage', `${req.provider} is an API provider: --worktree is for coding-agent CLIs, which work in a folder`);
    const givenDir = dirIdentity(req.cwd ?? process.cwd());
    const mcpConfigPath = req.mcpConfig ? path.resolve(req.mcpConfig) : null;
    if (mcpConfigPath) checkMcpConfig(mcpConfigPath);
    const cli = adapter ? await resolveSessionCli(adapter, req) : null;
    // The tmux socket's folder is checked (and, when squatted, replaced) before a handle exists.
    if (transport === 'tmux') await tmuxSocketFor(this.store.layout.tmux);
    const id = newId();
    // Made last, once every other check passed: bad input leaves no worktree behind.
    const worktree = req.worktree ? await createWorktree({ cwd: givenDir.realPath, name: req.name ?? id, ...(req.worktree.branch ? { branch: req.worktree.branch } : {}) }) : null;
    const workingDir = worktree ? dirIdentity(worktree.path) : givenDir;
    const now = new Date().toISOString();
    const provider: ProviderHandle = {
      provider: req.provider,
      transport,
      nativeSessionId: null,
      // An ACP agent names its session itself (`session/new`), so no id is chosen up front.
      pendingSessionId: api || transport === 'acp' ? null : randomUUID(),
      tmux: null,
      workingDir,
      projectDirId: null,
      model: req.model ?? api?.defaultModel ?? null,
      status: 'active',
      cli,
      transcript: api ? { path: historyFile(this.store.layout.history, id), offset: 0 } : null,
      signals: null,
      envNames: [...(adapter ?? api)!.envNames],
    };
    const handle: AgentSessionHandle = AgentSessionHandle.parse({
      schemaVersion: HANDLE_SCHEMA_VERSION,
      id,
      name: req.name ?? null,
      scope: 'chat',
      ownerId: null,
      correlationId: null,
      config: {
        workingDir,
        model: req.model ?? api?.defaultModel ?? null,
        systemPromptHash: req.systemPrompt ? sha256(req.systemPrompt) : null,
        systemPrompt: req.systemPrompt ?? null,
        mcpConfigHash: mcpConfigPath ? await hashFile(mcpConfigPath) : null,
        mcpConfigPath,
        toolPolicy,
        trustWorkingDir: req.trustWorkingDir !== false && (await readTrustWorkingDir(this.store.layout.root)),
      },
      provider,
      panes: [],
      ...(worktree ? { worktree } : {}),
      createdAt: now,
      updatedAt: now,
    });
    try {
      await this.saveNewHandle(handle, req.replace === true);
    } catch (err) {
      if (worktree) await releaseWorktree(worktree);
      throw err;
    }
    await req.onHandle?.(handle);
    let result: TurnResult;
    try {
      result = await this.runTurn(handle, req.message, { ...req, waitSeconds: undefined }, req.correlationId ?? null);
    } catch (err) {
      const e = toCalError(err);
      // A handle removed because no CLI ever ran for it is named no more in the error.
      if (await endFailedStart(this.ctx, handle.id, e.kind)) {
        const { handle: _removed, turn: _turn, ...details } = e.details;
        throw new CalError(e.kind, e.message, details);
      }
      throw err;
    }
    if (result.turn.status !== 'completed') await endFailedStart(this.ctx, handle.id, result.turn.status);
    return result;
  }

  /** Ends idle panes by the state directory's policy, or the limits given (sessions/reaping.ts). */
  async reap(req: { idleSeconds?: number | null; maxLive?: number | null; dryRun?: boolean; onEvent?: (e: import('../state/store.js').EventRecord) => void }): Promise<ReapItem[]> {
    const limits = reapLimits(await readReapPolicy(this.store.layout.root), req);
    return reapPanes(this.ctx, { ...limits, dryRun: req.dryRun === true, ...(req.onEvent ? { onEvent: req.onEvent } : {}) });
  }

  async continue(request: ContinueRequest): Promise<TurnResult> {
    const req = { ...request, message: wellFormedMessage(request.message) };
    const handle = await this.store.loadHandle(req.ref);
    refuseOtherTransport(handle, req.transport);
    try {
      await checkAcpCommand(handle.provider.cli, req.acpCommand, req.env);
      if (handle.provider.transport === 'api') {
        await checkStability(handle.config, req, { workingDir: false });
      } else {
        await preflight({
          adapter: await this.ctx.adapter(handle.provider.provider),
          handle: handle.provider,
          message: req.message,
          stability: { recorded: handle.config, requested: req },
          hooks: {
            emit: (event, detail) => this.ctx.event(handle.id, event, undefined, detail, req.onEvent),
            onSending: async () => undefined,
            onRecorded: async () => undefined,
            onHandleChanged: async () => undefined,
          },
        });
      }
    } catch (err) {
      const e = toCalError(err);
      if (e.kind === 'stale_handle' && handle.provider.transport === 'api') {
        await this.ctx.event(handle.id, 'stale_handle', undefined, { field: e.details.field, expected: e.details.expected, actual: e.details.actual }, req.onEvent);
      }
      throw new CalError(e.kind, e.message, { ...e.details, handle: handle.id });
    }
    // The trust policy of this turn: the handle's, unless --no-trust or the state dir's config says never.
    const noTrust = req.trustWorkingDir === false || !(await readTrustWorkingDir(this.store.layout.root));
    const started = await this.startEarly(noTrust ? { ...handle, config: { ...handle.config, trustWorkingDir: false } } : handle, req.env);
    // A CLI cal's entry started for this continue that the turn did not take ends unsent now.
    discardEarlyLaunch('the turn did not take it (another transport, a stale or busy handle, or no start)');
    try {
      return await this.runTurn(handle, req.message, { ...req, ...(noTrust ? { trustWorkingDir: false } : {}) }, req.correlationId ?? null, started);
    } finally {
      started?.discard();
    }
  }

  /** A resumed structured turn's CLI, started while the turn's bookkeeping runs (startStructuredTurn). */
  private async startEarly(handle: AgentSessionHandle, env: Record<string, string>): Promise<StartedStructuredTurn | null> {
    if (handle.provider.transport !== 'structured') return null;
    return startStructuredTurn({
      adapter: await this.ctx.adapter(handle.provider.provider),
      handle: handle.provider,
      config: sessionConfig(handle),
      env,
      sessionDir: path.join(this.store.layout.homes, handle.id),
    });
  }

  /**
   * Kills the session's pane. The handle keeps pointing at it: the next continue finds it gone,
   * reports lost_tmux, archives it and resumes natively (the logical session lives on).
   */
  async killTmux(ref: string): Promise<AgentSessionHandle> {
    const handle = await this.store.loadHandle(ref);
    if (handle.provider.transport !== 'tmux') {
      throw new CalError('non_applicable', `handle ${handle.id} is ${handle.provider.transport === 'api' ? 'an API session' : 'on the structured transport (one CLI process per turn)'}: it has no tmux pane to kill`, { handle: handle.id });
    }
    const killed = await killTransport(handle.provider, this.ctx.tmux);
    if (killed) await this.ctx.event(handle.id, 'pane_killed', undefined, { pane: killed.paneId });
    // A pane launched by a cal that died before recording it runs under the next pane's name.
    if (await killPaneNamed(this.store.layout.tmux, nextPaneName(handle), this.ctx.tmux)) {
      await this.ctx.event(handle.id, 'pane_killed', undefined, { orphan: true });
    }
    return handle;
  }

  /** Ends the handle's panes and deletes its records (sessions/remove-handle.ts). */
  async remove(ref: string, force = false): Promise<RemoveResult> {
    return removeHandle(this.ctx, ref, force);
  }

  /** The turn a piece of durable work tagged with this correlation id, if it was ever created. */
  async findTurn(handleRef: string, correlationId: string): Promise<TurnRecord | null> {
    const handle = await this.store.loadHandle(handleRef);
    return (await this.store.listTurns(handle.id)).filter((t) => t.correlationId === correlationId).at(-1) ?? null;
  }

  /** Appends a workflow event (waiting_for_lock, phase_completed, …) to a handle's event log. */
  async workflowEvent(handleId: string, event: string, detail?: Record<string, unknown>, sink?: (e: import('../state/store.js').EventRecord) => void): Promise<void> {
    await this.ctx.event(handleId, event, undefined, detail, sink);
  }

  /** Everything inspect shows about one handle. */
  async describe(ref: string): Promise<HandleView> {
    const handle = await this.store.loadHandle(ref);
    const alive = await transportAlive(handle.provider, this.ctx.tmux);
    const current = handle.provider.tmux;
    return {
      handle,
      panes: handle.panes.map((p) => {
        const isCurrent = current !== null && p.tmux.paneId === current.paneId && p.tmux.session === current.session && p.endedAt === null;
        return {
          label: `${p.tmux.session} ${p.tmux.paneId}`,
          current: isCurrent,
          alive: isCurrent && alive,
          launch: p.launch,
          startedAt: p.startedAt,
          endedAt: p.endedAt,
          endReason: p.endReason,
        };
      }),
      currentPaneAlive: alive,
      turns: await this.store.listTurns(handle.id),
      events: await this.store.readEvents(handle.id),
    };
  }

  /** Environment for running `provider` against cal's scripted model in a managed home under dir. */
  static async scriptedModelEnv(provider: ProviderName, dir: string, modelUrl: string, env: Record<string, string>): Promise<Record<string, string>> {
    return (await loadCliAdapter(provider)).scriptedModelEnv(dir, modelUrl, env);
  }

  /** The current pane's screen (a live preview for people), or null when there is no pane. */
  async screen(ref: string): Promise<string | null> {
    return transportScreen((await this.store.loadHandle(ref)).provider, 50, this.ctx.tmux);
  }

  /** The command that attaches a terminal to the current pane, or null when there is none. */
  async attachCommand(ref: string): Promise<string[] | null> {
    return attachArgv((await this.store.loadHandle(ref)).provider);
  }

  /**
   * Attaches this process's terminal to the session's live pane until the user detaches; tmux's
   * exit status. A structured or API session has no pane (non_applicable); a pane that is gone is
   * said so, with what brings the session back (not_found).
   */
  async attach(ref: string): Promise<number> {
    const handle = await this.store.loadHandle(ref);
    if (handle.provider.transport !== 'tmux') {
      throw new CalError('non_applicable', `handle ${handle.id} is ${handle.provider.transport === 'api' ? 'an API session' : 'on the structured transport (one CLI process per turn)'}: it has no pane to attach to`, { handle: handle.id });
    }
    if (!(await transportAlive(handle.provider, this.ctx.tmux))) {
      throw new CalError('not_found', `handle ${handle.id} has no live pane (it ended); cal continue ${handle.name ?? handle.id} "<message>" resumes the session in a new one`, { handle: handle.id });
    }
    return attachTerminal(handle.provider);
  }

  /** Presses keys in the session's live pane as a person would; false when it has none. */
  async pressKeys(ref: string, keys: string[]): Promise<boolean> {
    return pressKeys((await this.store.loadHandle(ref)).provider, keys, this.ctx.tmux);
  }

  /** Ends every pane of this state directory (cal's own tmux server): for scratch state. */
  async shutdownTransports(): Promise<void> {
    await shutdownTransports(this.store.layout.tmux, this.ctx.tmux);
  }

  async list(): Promise<HandleSummary[]> {
    const handles = await this.store.listHandles();
    const alive = await transportsAlive(handles.map((h) => h.provider), this.ctx.tmux);
    return Promise.all(handles.map(async (handle, i) => ({ handle, lastTurn: await this.store.lastTurn(handle.id), paneAlive: alive[i] === true })));
  }

  /** Cancels the turn in flight on a handle, from any process (sessions/cancel-turn.ts). */
  async cancel(ref: string, req: Omit<RecoverRequest, 'handle' | 'dryRun' | 'retryLost'>): Promise<CancelOutcome> {
    return cancelTurn(this.ctx, ref, req);
  }

  /** Settles every unfinished turn whose cal process is gone (sessions/recovery.ts). */
  async recover(req: RecoverRequest): Promise<RecoverItem[]> {
    return recover(this.ctx, req);
  }

  /**
   * Saves a new handle; a name is checked and taken under one lock, so two starts racing for one
   * name cannot both get it.
   */
  private async saveNewHandle(handle: AgentSessionHandle, replace: boolean): Promise<void> {
    if (handle.name === null) return this.store.saveHandle(handle);
    const lock = await this.store.locks.acquire('handle-names', { waitSeconds: 30 });
    try {
      // --replace removes only a readable handle of that name (never one whose id it equals).
      const holder = replace ? (await this.store.listHandles()).find((h) => h.name === handle.name) : undefined;
      if (holder) await removeHandle(this.ctx, holder.id, false, 'replace');
      if (await this.store.isNameTaken(handle.name)) throw nameTaken(handle.name);
      await this.store.saveHandle(handle);
    } finally {
      await lock.release();
    }
  }

  /** One turn under the handle's lock: earlier turns the CLI still has are settled first. */
  private async runTurn(initial: AgentSessionHandle, message: string, req: ExecOptions, correlationId: string | null, started: StartedStructuredTurn | null = null): Promise<TurnResult> {
    const journal = await newTurn(this.store, initial.id, message, correlationId);
    timingMark('turn-recorded');
    let lock: HeldLock;
    try {
      lock = await this.store.locks.acquire(handleLockName(initial.id), {
        waitSeconds: req.waitSeconds,
        onWait: async () => {
          await journal.set('waiting_for_lock');
          await this.ctx.event(initial.id, 'waiting_for_lock', journal.turn.id, undefined, req.onEvent);
        },
        ...(req.signal ? { signal: req.signal } : {}),
      });
    } catch (err) {
      const e = toCalError(err);
      // The lock's file name is cal's business: the message names the handle.
      const message = e.message.replace(handleLockName(initial.id), `handle ${initial.id}`);
      // A busy refusal sent nothing and is no turn of the session: its record goes (the listing
      // keeps showing the turn in flight, not a failure that never reached the CLI).
      if (e.kind === 'busy') await this.store.deleteTurn(journal.turn);
      else await journal.set(e.kind === 'interrupted' ? 'interrupted' : 'failed', { error: { kind: e.kind, message } });
      throw new CalError(e.kind, message, { ...e.details, handle: initial.id, ...(e.kind === 'busy' ? {} : { turn: journal.turn.id }) });
    }
    timingMark('locked');
    // From here the turn is this cal's: a `cal cancel` elsewhere reaches it through its record.
    // Whether it ended with the panes it began with (a paste): then the live count is unchanged.
    let samePanes = false;
    const watch = watchCancelRequests(this.ctx, initial.id, journal.turn.id, req.signal);
    req = { ...req, signal: watch.signal };
    try {
      try {
        await settleEarlierTurns(this.ctx, initial.id, journal.turn, req);
      } catch (err) {
        const e = toCalError(err);
        // An earlier turn still in flight is a busy refusal too: nothing of this one was sent.
        if (e.kind === 'busy') await this.store.deleteTurn(journal.turn);
        else await journal.set('failed', { error: { kind: e.kind, message: e.message } });
        throw new CalError(e.kind, e.message, { ...e.details, handle: initial.id, ...(e.kind === 'busy' ? {} : { turn: journal.turn.id }) });
      }
      const result = await executeTurn(this.ctx, initial.id, journal, req, { kind: 'deliver' }, started);
      samePanes = result.handle.panes.length === initial.panes.length;
      return result;
    } finally {
      watch.stop();
      await lock.release();
      await reapAfterTurn(this.ctx, !samePanes);
    }
  }
}
