import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { apiAdapter, cliAdapter } from '../adapters/registry.js';
import type { CliAdapter, SessionConfig, TurnProgress } from '../adapters/types.js';
import { continueProvider, startProvider } from '../engine/continuation.js';
import { awaitRecordedTurn, observeRecordedTurn, skipPastTranscript, type EngineHooks, type EngineOptions, type ProviderEvent, type TurnOutcome } from '../engine/provider-continuation.js';
import { isProcessAlive, processStartTime, type HeldLock } from '../state/lock.js';
import { historyFile, readHistory, writeHistory } from './api-history.js';
import { attachArgv, killTransport, transportAlive, transportScreen } from '../engine/transport.js';
import { tmuxSocketFor } from '../engine/tmux-socket.js';
import { CalError, toCalError } from '../errors.js';
import {
  AgentSessionHandle,
  HANDLE_SCHEMA_VERSION,
  HandleName,
  type PaneRecord,
  type ProviderHandle,
  type ProviderName,
  type Transport,
} from '../handles/schema.js';
import { newId, type EventRecord, type StateStore } from '../state/store.js';
import { terminalStatuses, type TurnRecord, type TurnStatus } from '../state/turns.js';
import { checkStability, dirIdentity, hashFile, sha256 } from './fingerprint.js';
import { listCertifications, type CertificationSummary } from '../certify/results.js';

/**
 * The agent-session layer: "continue this session with this message". Owns handles, the
 * stability fingerprint, one continuation per handle, turn records and lifecycle events.
 * Transport mechanics stay behind the provider-level engine.
 */
export interface StartRequest {
  provider: ProviderName;
  message: string;
  cwd?: string;
  model?: string;
  transport?: Transport;
  name?: string;
  systemPrompt?: string;
  mcpConfig?: string;
  cliPath?: string;
  timeoutSeconds?: number;
  env: Record<string, string>;
  onEvent?: (event: EventRecord) => void;
  onProgress?: (progress: TurnProgress) => void;
  /** Tags the turn record, so durable work can find its turn again after a crash. */
  correlationId?: string;
  /** Called once the handle is saved, before anything is sent. */
  onHandle?: (handle: AgentSessionHandle) => Promise<void>;
}

export interface ContinueRequest {
  ref: string;
  message: string;
  cwd?: string;
  model?: string;
  systemPrompt?: string;
  mcpConfig?: string;
  /** undefined: busy at once; a number of seconds (Infinity: forever) to wait in line. */
  waitSeconds?: number;
  timeoutSeconds?: number;
  env: Record<string, string>;
  onEvent?: (event: EventRecord) => void;
  onProgress?: (progress: TurnProgress) => void;
  correlationId?: string;
}

export interface TurnResult {
  handle: AgentSessionHandle;
  turn: TurnRecord;
}

/** A pane as people see it: commands and the TUI read these, never the transport fields. */
export interface PaneView {
  /** A label for people (tmux session and pane id). */
  label: string;
  current: boolean;
  alive: boolean;
  launch: 'fresh' | 'resume';
  startedAt: string;
  endedAt: string | null;
  endReason: string | null;
}

export interface HandleView {
  handle: AgentSessionHandle;
  panes: PaneView[];
  currentPaneAlive: boolean;
  turns: TurnRecord[];
  events: EventRecord[];
}

export interface RecoverRequest {
  dryRun?: boolean;
  retryLost?: boolean;
  env: Record<string, string>;
  timeoutSeconds?: number;
  onEvent?: (event: EventRecord) => void;
}

export type RecoverAction = 'settled_from_transcript' | 'waited_for_cli' | 'marked_lost' | 'retried_lost' | 'delivered' | 'skipped_busy' | 'skipped_settled';

export interface RecoverItem {
  handle: string;
  turn: string;
  message: string;
  before: TurnStatus;
  action: RecoverAction;
  status: TurnStatus;
  answer: string | null;
  error?: string;
}

type RecoveryPlan =
  | { action: 'settled_from_transcript'; status: TurnOutcome['status']; answer: string | null; error: string | null; turnKey: string | null; tools: TurnOutcome['tools']; handle: ProviderHandle | null }
  | { action: 'waited_for_cli'; handle: ProviderHandle | null }
  | { action: 'marked_lost' }
  | { action: 'delivered'; start: boolean };

export interface HandleSummary {
  handle: AgentSessionHandle;
  lastTurn: TurnRecord | null;
}

const DEFAULT_TIMEOUT_S = 600;

interface TurnJournal {
  turn: TurnRecord;
  set(status: TurnStatus, patch?: Partial<TurnRecord>): Promise<void>;
}

interface ExecOptions {
  env: Record<string, string>;
  timeoutSeconds?: number;
  onEvent?: (event: EventRecord) => void;
  onProgress?: (progress: TurnProgress) => void;
}

type TurnAction = { kind: 'start' } | { kind: 'continue' } | { kind: 'await'; sentAt: Date };

export function handleLockName(handleId: string): string {
  return `handle-${handleId}`;
}

/**
 * Fault injection for the durability tests: with CAL_FAULT=<point> in the environment, cal
 * stops at that point (after the turn record is written) until it is killed.
 */
async function faultPoint(point: string, env: Record<string, string>): Promise<void> {
  if (env.CAL_FAULT !== point) return;
  process.stderr.write(`cal: paused at fault point ${point}\n`);
  await new Promise(() => undefined);
}

export class AgentSessions {
  constructor(private readonly store: StateStore) {}

  async start(req: StartRequest): Promise<TurnResult> {
    const api = apiAdapter(req.provider);
    const adapter = api ? null : cliAdapter(req.provider);
    const transport = req.transport ?? (api ? 'api' : 'tmux');
    if (api && transport !== 'api') throw new CalError('usage', `${req.provider} is an API provider: it only has --transport api`);
    if (!api && transport === 'api') throw new CalError('usage', `${req.provider} is a coding-agent CLI; --transport api is for the API providers (anthropic, openai)`);
    if (adapter && transport === 'structured' && !adapter.structured) {
      throw new CalError('usage', `${req.provider} has no structured transport in cal; use --transport tmux`);
    }
    if (api && req.mcpConfig) throw new CalError('usage', `${req.provider} is an API provider: --mcp-config applies to coding-agent CLIs`);
    api?.checkEnv(req.env);
    refuseForTerminal(adapter, transport, req.message);
    if (req.name !== undefined) {
      if (!HandleName.safeParse(req.name).success) throw new CalError('usage', `invalid --name ${JSON.stringify(req.name)}: letters, digits, '.', '_', '-'`);
      if (await this.store.isNameTaken(req.name)) throw new CalError('usage', `a handle named ${req.name} already exists; pick another --name`);
    }
    const workingDir = dirIdentity(req.cwd ?? process.cwd());
    const mcpConfigPath = req.mcpConfig ? path.resolve(req.mcpConfig) : null;
    const cli = adapter ? await adapter.resolveCli(req.cliPath, req.env) : null;
    const id = newId();
    const now = new Date().toISOString();
    const provider: ProviderHandle = {
      provider: req.provider,
      transport,
      nativeSessionId: null,
      pendingSessionId: api ? null : randomUUID(),
      tmux: null,
      workingDir,
      projectDirId: null,
      model: req.model ?? api?.defaultModel ?? null,
      status: 'active',
      cli,
      transcript: api ? { path: historyFile(this.store.layout.history, id), offset: 0 } : null,
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
        toolPolicy: 'default',
      },
      provider,
      panes: [],
      createdAt: now,
      updatedAt: now,
    });
    await this.store.saveHandle(handle);
    await req.onHandle?.(handle);
    return this.runTurn(handle, req.message, { ...req, waitSeconds: undefined }, 'start');
  }

  async continue(req: ContinueRequest): Promise<TurnResult> {
    const handle = await this.store.loadHandle(req.ref);
    try {
      await checkStability(handle.config, req, { workingDir: handle.provider.transport !== 'api' });
    } catch (err) {
      const e = toCalError(err);
      if (e.kind === 'stale_handle') {
        await this.event(handle.id, 'stale_handle', undefined, { field: e.details.field, expected: e.details.expected, actual: e.details.actual }, req.onEvent);
      }
      throw new CalError(e.kind, e.message, { ...e.details, handle: handle.id });
    }
    if (handle.provider.transport !== 'api') refuseForTerminal(cliAdapter(handle.provider.provider), handle.provider.transport, req.message, handle.id);
    return this.runTurn(handle, req.message, req, 'continue');
  }

  /**
   * Kills the session's pane. The handle keeps pointing at it: the next continue finds it gone,
   * reports lost_tmux, archives it and resumes natively (the logical session lives on).
   */
  async killTmux(ref: string): Promise<AgentSessionHandle> {
    const handle = await this.store.loadHandle(ref);
    if (handle.provider.transport === 'api') {
      throw new CalError('non_applicable', `handle ${handle.id} is an API session: it has no tmux pane to kill`, { handle: handle.id });
    }
    const killed = await killTransport(handle.provider);
    if (killed) await this.event(handle.id, 'pane_killed', undefined, { pane: killed.paneId });
    return handle;
  }

  /** The turn a piece of durable work tagged with this correlation id, if it was ever created. */
  async findTurn(handleRef: string, correlationId: string): Promise<TurnRecord | null> {
    const handle = await this.store.loadHandle(handleRef);
    return (await this.store.listTurns(handle.id)).filter((t) => t.correlationId === correlationId).at(-1) ?? null;
  }

  /** Appends a workflow event (waiting_for_lock, phase_completed, …) to a handle's event log. */
  async workflowEvent(handleId: string, event: string, detail?: Record<string, unknown>, sink?: (e: EventRecord) => void): Promise<void> {
    await this.event(handleId, event, undefined, detail, sink);
  }

  /** Everything inspect shows about one handle. */
  async describe(ref: string): Promise<HandleView> {
    const handle = await this.store.loadHandle(ref);
    const alive = await transportAlive(handle.provider);
    const currentPaneId = handle.provider.tmux?.paneId ?? null;
    return {
      handle,
      panes: handle.panes.map((p) => {
        const current = p.tmux.paneId === currentPaneId && p.endedAt === null;
        return {
          label: `${p.tmux.session} ${p.tmux.paneId}`,
          current,
          alive: current && alive,
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
    return cliAdapter(provider).scriptedModelEnv(dir, modelUrl, env);
  }

  /** The current pane's screen (a live preview for people), or null when there is no pane. */
  async screen(ref: string): Promise<string | null> {
    return transportScreen((await this.store.loadHandle(ref)).provider);
  }

  /** The command that attaches a terminal to the current pane, or null when there is none. */
  async attachCommand(ref: string): Promise<string[] | null> {
    return attachArgv((await this.store.loadHandle(ref)).provider);
  }

  /** Stored `cal certify` results for a provider's CLI version, one per mode (inspect shows them). */
  async certification(provider: string, version: string): Promise<CertificationSummary[]> {
    return (await listCertifications(this.store.layout.root)).filter((c) => c.provider === provider && c.version === version);
  }

  async list(): Promise<HandleSummary[]> {
    const out: HandleSummary[] = [];
    for (const handle of await this.store.listHandles()) {
      const turns = await this.store.listTurns(handle.id);
      out.push({ handle, lastTurn: turns.at(-1) ?? null });
    }
    return out;
  }

  private async runTurn(
    initial: AgentSessionHandle,
    message: string,
    req: (StartRequest | ContinueRequest) & { waitSeconds?: number },
    kind: 'start' | 'continue',
  ): Promise<TurnResult> {
    const journal = await this.newTurn(initial.id, message, req.correlationId ?? null);
    let lock: HeldLock;
    try {
      lock = await this.store.locks.acquire(handleLockName(initial.id), {
        waitSeconds: req.waitSeconds,
        onWait: async () => {
          await journal.set('waiting_for_lock');
          await this.event(initial.id, 'waiting_for_lock', journal.turn.id, undefined, req.onEvent);
        },
      });
    } catch (err) {
      const e = toCalError(err);
      await journal.set('failed', { error: { kind: e.kind, message: e.message } });
      throw new CalError(e.kind, e.message, { ...e.details, handle: initial.id, turn: journal.turn.id });
    }
    try {
      return await this.executeTurn(initial.id, journal, req, kind === 'start' ? { kind: 'start' } : { kind: 'continue' });
    } finally {
      await lock.release();
    }
  }

  /** Writes the turn record before anything is sent (design §5). */
  private async newTurn(handleId: string, message: string, correlationId: string | null = null): Promise<TurnJournal> {
    const turns = await this.store.listTurns(handleId);
    const now = new Date().toISOString();
    const turn: TurnRecord = {
      schemaVersion: 1,
      id: `t${String(turns.length + 1).padStart(4, '0')}-${newId(6)}`,
      handleId,
      seq: turns.length + 1,
      message,
      status: 'queued',
      turnKey: null,
      answer: null,
      error: null,
      tools: [],
      ownerPid: process.pid,
      ownerStartTime: processStartTime(process.pid),
      correlationId,
      sentAt: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.store.saveTurn(turn);
    return this.journal(turn);
  }

  private journal(initial: TurnRecord): TurnJournal {
    const store = this.store;
    const journal: TurnJournal = {
      turn: initial,
      async set(status: TurnStatus, patch: Partial<TurnRecord> = {}) {
        journal.turn = { ...journal.turn, ...patch, status };
        await store.saveTurn(journal.turn);
      },
    };
    return journal;
  }

  /**
   * Runs one turn under the handle's lock: deliver it (start or continue) or, for recover,
   * wait on a turn the CLI already has. The turn record moves through its statuses on the way.
   */
  private async executeTurn(handleId: string, journal: TurnJournal, req: ExecOptions, action: TurnAction): Promise<TurnResult> {
    // Reload under the lock: the previous holder may have changed panes or offsets.
    let handle = await this.store.loadHandle(handleId);
    const message = journal.turn.message;
    const config = sessionConfig(handle);
    const hooks: EngineHooks = {
      emit: (event: ProviderEvent, detail?: Record<string, unknown>) => this.event(handle.id, event, journal.turn.id, detail, req.onEvent),
      onSending: async () => {
        await journal.set('sending', { ownerPid: process.pid, ownerStartTime: processStartTime(process.pid) });
        await faultPoint('before-send', req.env);
      },
      onSent: () => journal.set(journal.turn.status, { sentAt: new Date().toISOString() }),
      onRecorded: (turnKey) => journal.set('running', { turnKey }),
      onHandleChanged: async (provider, change) => {
        let panes = handle.panes;
        if (change.archived) panes = archivePane(panes, change.archived.paneId, change.archived.reason);
        if (change.added) panes = [change.added, ...panes];
        handle = { ...handle, provider, panes };
        await this.store.saveHandle(handle);
      },
      onProgress: req.onProgress,
    };
    const engineOpts: EngineOptions = {
      tmuxSocket: await tmuxSocketFor(this.store.layout.tmux),
      paneName: `cal-${handle.id}-${handle.panes.length + 1}`,
      env: req.env,
      timeoutMs: (req.timeoutSeconds ?? DEFAULT_TIMEOUT_S) * 1000,
      hooks,
    };
    let outcome: TurnOutcome;
    try {
      if (handle.provider.transport === 'api') {
        outcome = await this.apiTurn(handle, message, req.env, engineOpts.timeoutMs, hooks);
      } else {
        const adapter = cliAdapter(handle.provider.provider);
        const run =
          action.kind === 'await'
            ? await awaitRecordedTurn(adapter, handle.provider, config, message, action.sentAt, engineOpts)
            : action.kind === 'start' || (!handle.provider.nativeSessionId && !handle.provider.tmux)
              ? await startProvider(adapter, handle.provider, config, message, engineOpts)
              : await continueProvider(adapter, handle.provider, config, message, engineOpts);
        outcome = run.outcome;
      }
    } catch (err) {
      const e = toCalError(err);
      // A timeout leaves the turn running: the CLI may still finish it, and recover settles it.
      const status: TurnStatus = e.kind === 'timeout' ? journal.turn.status : e.kind === 'lost' ? 'lost' : 'failed';
      if (!terminalStatuses.has(journal.turn.status)) await journal.set(status, { error: { kind: e.kind, message: e.message } });
      if (e.kind !== 'timeout') await this.event(handle.id, 'failed', journal.turn.id, { kind: e.kind, message: e.message }, req.onEvent);
      throw new CalError(e.kind, e.message, { ...e.details, handle: handle.id, turn: journal.turn.id });
    }
    await journal.set(outcome.status, {
      answer: outcome.answer,
      turnKey: outcome.turnKey ?? journal.turn.turnKey,
      tools: outcome.tools,
      error: outcome.error ? { kind: errorKindFor(outcome.status), message: outcome.error } : null,
    });
    await this.event(handle.id, outcome.status, journal.turn.id, { turnKey: outcome.turnKey }, req.onEvent);
    return { handle, turn: journal.turn };
  }

  /**
   * Settles every unfinished turn whose cal process is gone (design §6): from the CLI's transcript
   * first, so a message the CLI already received is never sent twice; a CLI still working is
   * waited for; a message never delivered is delivered; a turn whose pane died without an end
   * record is lost (sent again through continuation with retryLost).
   */
  async recover(req: RecoverRequest): Promise<RecoverItem[]> {
    const items: RecoverItem[] = [];
    for (const handle of await this.store.listHandles()) {
      for (const turn of await this.store.listTurns(handle.id)) {
        if (terminalStatuses.has(turn.status)) continue;
        if (turn.ownerPid !== null && isProcessAlive(turn.ownerPid, turn.ownerStartTime)) continue;
        items.push(await this.recoverTurn(handle.id, turn, req));
      }
    }
    return items;
  }

  private async recoverTurn(handleId: string, stale: TurnRecord, req: RecoverRequest): Promise<RecoverItem> {
    const item = (action: RecoverAction, turn: TurnRecord, error?: string): RecoverItem => ({
      handle: handleId,
      turn: turn.id,
      message: turn.message,
      before: stale.status,
      action,
      status: turn.status,
      answer: turn.answer,
      ...(error ? { error } : {}),
    });
    let lock: HeldLock;
    try {
      // Another cal (a live continuation or a second recover) holding the handle owns its turns.
      lock = await this.store.locks.acquire(handleLockName(handleId));
    } catch {
      return item('skipped_busy', stale);
    }
    try {
      const current = (await this.store.listTurns(handleId)).find((t) => t.id === stale.id) ?? stale;
      if (terminalStatuses.has(current.status) || (current.ownerPid !== null && isProcessAlive(current.ownerPid, current.ownerStartTime))) {
        return item('skipped_settled', current);
      }
      const plan = await this.recoveryPlan(handleId, current, req.env);
      if (req.dryRun) return item(plan.action, current);
      const journal = this.journal({ ...current, ownerPid: process.pid, ownerStartTime: processStartTime(process.pid) });
      await journal.set(current.status);
      await this.event(handleId, 'recovering', current.id, { action: plan.action }, req.onEvent);
      try {
        switch (plan.action) {
          case 'settled_from_transcript':
            await journal.set(plan.status, { answer: plan.answer, error: plan.error ? { kind: errorKindFor(plan.status), message: plan.error } : null, turnKey: plan.turnKey, tools: plan.tools });
            if (plan.handle) await this.store.saveHandle({ ...(await this.store.loadHandle(handleId)), provider: plan.handle });
            await this.event(handleId, plan.status, current.id, { turnKey: plan.turnKey, recovered: true }, req.onEvent);
            break;
          case 'waited_for_cli':
            if (plan.handle) await this.store.saveHandle({ ...(await this.store.loadHandle(handleId)), provider: plan.handle });
            await this.executeTurn(handleId, journal, req, { kind: 'await', sentAt: new Date(current.createdAt) });
            break;
          case 'marked_lost': {
            const lostHandle = await this.store.loadHandle(handleId);
            await this.store.saveHandle({ ...lostHandle, provider: await skipPastTranscript(lostHandle.provider) });
            await journal.set('lost', { error: { kind: 'lost', message: 'the pane ended before the turn recorded its end (found by cal recover)' } });
            await this.event(handleId, 'lost', current.id, { recovered: true }, req.onEvent);
            if (req.retryLost) {
              const fresh = await this.newTurn(handleId, current.message, current.correlationId);
              await this.executeTurn(handleId, fresh, req, { kind: 'continue' });
              return item('retried_lost', fresh.turn);
            }
            break;
          }
          case 'delivered':
            await this.executeTurn(handleId, journal, req, { kind: plan.start ? 'start' : 'continue' });
            break;
        }
      } catch (err) {
        return item(plan.action, journal.turn, toCalError(err).message);
      }
      return item(plan.action, journal.turn);
    } finally {
      await lock.release();
    }
  }

  /** Decides what recover does with one turn, from the transcript and the pane, changing nothing. */
  private async recoveryPlan(handleId: string, turn: TurnRecord, env: Record<string, string>): Promise<RecoveryPlan> {
    const handle = await this.store.loadHandle(handleId);
    const sentAt = new Date(new Date(turn.createdAt).getTime() - 2000);
    if (handle.provider.transport === 'api') {
      const history = handle.provider.transcript ? await readHistory(handle.provider.transcript.path) : [];
      const index = turn.turnKey?.startsWith('m') ? Number(turn.turnKey.slice(1)) : null;
      const reply = index !== null ? history[index + 1] : undefined;
      if (index !== null && history[index]?.content === turn.message && reply?.role === 'assistant') {
        return { action: 'settled_from_transcript', status: 'completed', answer: reply.content, error: null, turnKey: turn.turnKey, tools: [], handle: null };
      }
      return { action: 'delivered', start: false };
    }
    const adapter = cliAdapter(handle.provider.provider);
    const config = sessionConfig(handle);
    const mayHaveBeenSent = turn.status === 'sending' || turn.status === 'running';
    if (mayHaveBeenSent && (handle.provider.transcript || handle.provider.tmux)) {
      const seen = await observeRecordedTurn(adapter, handle.provider, config, turn.message, sentAt, env);
      const obs = seen.observation;
      const rebound = seen.handle !== handle.provider ? seen.handle : null;
      if (obs.phase === 'ended') {
        return { action: 'settled_from_transcript', status: obs.status, answer: obs.answer, error: obs.error, turnKey: obs.turnKey, tools: seen.tools, handle: seen.handle };
      }
      if (obs.phase === 'running') return seen.paneAlive ? { action: 'waited_for_cli', handle: rebound } : { action: 'marked_lost' };
      // Not in the transcript. A message that left cal may still be on its way into a live pane.
      if (seen.paneAlive && turn.sentAt) return { action: 'waited_for_cli', handle: rebound };
    }
    return { action: 'delivered', start: !handle.provider.nativeSessionId && !handle.provider.transcript };
  }

  /**
   * Agent-level continuation of an API session: the stored history plus the new message goes to
   * the vendor API; the history grows only by a completed exchange.
   */
  private async apiTurn(handle: AgentSessionHandle, message: string, env: Record<string, string>, timeoutMs: number, hooks: EngineHooks): Promise<TurnOutcome> {
    const api = apiAdapter(handle.provider.provider);
    if (!api || !handle.provider.transcript) throw new CalError('invalid_handle', `handle ${handle.id} is an API session without an API provider or history`);
    api.checkEnv(env);
    const file = handle.provider.transcript.path;
    const history = await readHistory(file);
    await hooks.onSending();
    // The key is the index the user message takes in the history: recover uses it to tell a
    // finished exchange from one that never reached the API.
    await hooks.onRecorded(`m${history.length}`);
    await hooks.emit('running', {});
    const reply = await api.send({
      model: handle.config.model ?? api.defaultModel,
      system: handle.config.systemPrompt,
      messages: [...history, { role: 'user', content: message }],
      env,
      timeoutMs,
    });
    if (!reply.ok) return { status: 'failed', answer: null, error: reply.message, turnKey: null, tools: [] };
    const messages = [...history, { role: 'user' as const, content: message }, { role: 'assistant' as const, content: reply.text }];
    await writeHistory(file, messages);
    await hooks.onHandleChanged({ ...handle.provider, status: 'idle', transcript: { path: file, offset: messages.length } }, {});
    return { status: 'completed', answer: reply.text, error: null, turnKey: `m${history.length}`, tools: [] };
  }

  private async event(handle: string, event: string, turn?: string, detail?: Record<string, unknown>, sink?: (e: EventRecord) => void): Promise<void> {
    const record: EventRecord = { time: new Date().toISOString(), handle, event, ...(turn ? { turn } : {}), ...(detail ? { detail } : {}) };
    await this.store.appendEvent(record);
    sink?.(record);
  }
}

/** A message the CLI's terminal would run as a command is refused before any turn is recorded. */
function refuseForTerminal(adapter: CliAdapter | null, transport: Transport, message: string, handle?: string): void {
  if (!adapter || transport !== 'tmux') return;
  const refusal = adapter.refuseMessage?.(message);
  if (refusal) throw new CalError('usage', refusal, handle ? { handle } : {});
}

/** What the adapter needs of the session's recorded configuration. */
function sessionConfig(handle: AgentSessionHandle): SessionConfig {
  return {
    cwd: handle.config.workingDir.realPath,
    model: handle.config.model,
    systemPrompt: handle.config.systemPrompt,
    mcpConfigPath: handle.config.mcpConfigPath,
    toolPolicy: handle.config.toolPolicy,
  };
}

function errorKindFor(status: TurnOutcome['status']): string {
  return status === 'failed' ? 'turn_failed' : status;
}

function archivePane(panes: PaneRecord[], paneId: string, reason: string): PaneRecord[] {
  return panes.map((p) => (p.tmux.paneId === paneId && p.endedAt === null ? { ...p, endedAt: new Date().toISOString(), endReason: reason } : p));
}
