import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { apiAdapter, cliAdapter } from '../adapters/registry.js';
import type { SessionConfig, TurnObserver } from '../adapters/types.js';
import { continueProvider, startProvider } from '../engine/continuation.js';
import type { EngineHooks, ProviderEvent, TurnOutcome } from '../engine/provider-continuation.js';
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
  onProgress?: (observer: TurnObserver) => void;
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
  onProgress?: (observer: TurnObserver) => void;
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

export interface HandleSummary {
  handle: AgentSessionHandle;
  lastTurn: TurnRecord | null;
}

const DEFAULT_TIMEOUT_S = 600;

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
    let handle = initial;
    const turns = await this.store.listTurns(handle.id);
    const now = new Date().toISOString();
    let turn: TurnRecord = {
      schemaVersion: 1,
      id: `t${String(turns.length + 1).padStart(4, '0')}-${newId(6)}`,
      handleId: handle.id,
      seq: turns.length + 1,
      message,
      status: 'queued',
      turnKey: null,
      answer: null,
      error: null,
      tools: [],
      ownerPid: process.pid,
      createdAt: now,
      updatedAt: now,
    };
    await this.store.saveTurn(turn);
    const setStatus = async (status: TurnStatus, patch: Partial<TurnRecord> = {}) => {
      turn = { ...turn, ...patch, status };
      await this.store.saveTurn(turn);
    };

    let lock;
    try {
      lock = await this.store.locks.acquire(`handle-${handle.id}`, {
        waitSeconds: req.waitSeconds,
        onWait: async () => {
          await setStatus('waiting_for_lock');
          await this.event(handle.id, 'waiting_for_lock', turn.id, undefined, req.onEvent);
        },
      });
    } catch (err) {
      const e = toCalError(err);
      await setStatus('failed', { error: { kind: e.kind, message: e.message } });
      throw new CalError(e.kind, e.message, { ...e.details, handle: handle.id, turn: turn.id });
    }

    try {
      // Reload under the lock: the previous holder may have changed panes or offsets.
      handle = await this.store.loadHandle(handle.id);
      const config: SessionConfig = {
        cwd: handle.config.workingDir.realPath,
        model: handle.config.model,
        systemPrompt: handle.config.systemPrompt,
        mcpConfigPath: handle.config.mcpConfigPath,
        toolPolicy: handle.config.toolPolicy,
      };
      const hooks: EngineHooks = {
        emit: (event: ProviderEvent, detail?: Record<string, unknown>) => this.event(handle.id, event, turn.id, detail, req.onEvent),
        onSending: () => setStatus('sending'),
        onRecorded: (turnKey) => setStatus('running', { turnKey }),
        onHandleChanged: async (provider, change) => {
          let panes = handle.panes;
          if (change.archived) panes = archivePane(panes, change.archived.paneId, change.archived.reason);
          if (change.added) panes = [change.added, ...panes];
          handle = { ...handle, provider, panes };
          await this.store.saveHandle(handle);
        },
        onProgress: req.onProgress,
      };
      const engineOpts = {
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
          const run = kind === 'start'
            ? await startProvider(adapter, handle.provider, config, message, engineOpts)
            : await continueProvider(adapter, handle.provider, config, message, engineOpts);
          outcome = run.outcome;
        }
      } catch (err) {
        const e = toCalError(err);
        // A timeout leaves the turn running: the CLI may still finish it, and recover settles it.
        const status: TurnStatus = e.kind === 'timeout' ? turn.status : e.kind === 'lost' ? 'lost' : 'failed';
        if (!terminalStatuses.has(turn.status)) await setStatus(status, { error: { kind: e.kind, message: e.message } });
        if (e.kind !== 'timeout') await this.event(handle.id, 'failed', turn.id, { kind: e.kind, message: e.message }, req.onEvent);
        throw new CalError(e.kind, e.message, { ...e.details, handle: handle.id, turn: turn.id });
      }
      await setStatus(outcome.status, {
        answer: outcome.answer,
        turnKey: outcome.turnKey ?? turn.turnKey,
        tools: outcome.tools,
        error: outcome.error ? { kind: errorKindFor(outcome.status), message: outcome.error } : null,
      });
      await this.event(handle.id, outcome.status, turn.id, { turnKey: outcome.turnKey }, req.onEvent);
      return { handle, turn };
    } finally {
      await lock.release();
    }
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
    await hooks.onRecorded(null);
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
    return { status: 'completed', answer: reply.text, error: null, turnKey: `m${messages.length - 1}`, tools: [] };
  }

  private async event(handle: string, event: string, turn?: string, detail?: Record<string, unknown>, sink?: (e: EventRecord) => void): Promise<void> {
    const record: EventRecord = { time: new Date().toISOString(), handle, event, ...(turn ? { turn } : {}), ...(detail ? { detail } : {}) };
    await this.store.appendEvent(record);
    sink?.(record);
  }
}

function errorKindFor(status: TurnOutcome['status']): string {
  return status === 'failed' ? 'turn_failed' : status;
}

function archivePane(panes: PaneRecord[], paneId: string, reason: string): PaneRecord[] {
  return panes.map((p) => (p.tmux.paneId === paneId && p.endedAt === null ? { ...p, endedAt: new Date().toISOString(), endReason: reason } : p));
}
