import { appendFileSync, chmodSync, existsSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CliAdapter, DraftControl, LaunchRequest, PromptMatch, SessionConfig, StallKeys, StartedStructuredTurn, StructuredRunRequest, StructuredStartRequest, StructuredTurnResult } from '../../src/adapters/types.js';
import { TEXT, type MessageGuard } from '../../src/adapters/message-guard.js';
import { TranscriptTurnObserver } from '../../src/adapters/turn-observer.js';
import type { TmuxFactory } from '../../src/engine/tmux-control.js';
import type { EngineHooks, PaneChange, ProviderEvent, TurnRequest } from '../../src/engine/types.js';
import type { ProviderHandle } from '../../src/handles/schema.js';
import { AgentSessions } from '../../src/sessions/agent-sessions.js';
import { StateStore } from '../../src/state/store.js';
import { FakeTmux, type FakePane } from './fake-tmux.js';
import { scratchDir, scratchDirSync } from './scratch.js';

/**
 * A fake tmux and a fake CLI adapter, so the engine's §4 decision and §5 turn endings run with
 * no binary and no tmux: the fake "CLI" writes a tiny JSONL transcript of its own format when a
 * pane is launched or pasted into, as the scripted test tells it to.
 *
 * Transcript records: {t:'user', text, key}, {t:'answer', text}, {t:'end'}, {t:'error', text},
 * {t:'interrupt'}, and anything else is a record of no known shape; any may carry `timestamp`.
 */
export type FakeRecord = Record<string, unknown>;

export { FakeTmux, type FakePane } from './fake-tmux.js';

/** What the fake CLI does: the records it writes for a message (after a launch or a paste). */
export type FakeBehaviour = (message: string, pane: FakePane) => FakeRecord[] | 'die' | 'die-after-recording' | 'ignore';

/** The fake CLI: one transcript file per session id under `dir`. */
export class FakeCli {
  readonly dir = scratchDirSync('fake-cli');
  behaviour: FakeBehaviour = (message) => [{ t: 'user', text: message, key: 'k1' }, { t: 'answer', text: `echo: ${message}` }, { t: 'end' }];
  received: string[] = [];
  private readonly sessions = new Map<FakePane, string>();
  /** Records to write when the pane is interrupted (Escape). */
  onInterrupt: FakeRecord[] = [{ t: 'interrupt' }];
  /** Records to write when other keys are pressed (a dialog answered), or none. */
  onKeys: (keys: string[]) => FakeRecord[] = () => [];

  transcript(sessionId: string): string {
    return path.join(this.dir, `${sessionId}.jsonl`);
  }

  attach(pane: FakePane, sessionId: string): void {
    this.sessions.set(pane, sessionId);
  }

  sessionOf(pane: FakePane): string {
    return this.sessions.get(pane) as string;
  }

  write(sessionId: string, records: FakeRecord[]): void {
    // Timestamped as the real CLIs' records are, so time bounds are exercised too.
    for (const r of records) appendFileSync(this.transcript(sessionId), `${JSON.stringify({ timestamp: new Date().toISOString(), ...r })}\n`);
  }

  receive(message: string, pane: FakePane, sessionId: string): void {
    this.sessions.set(pane, sessionId);
    this.received.push(message);
    const out = this.behaviour(message, pane);
    if (out === 'ignore') return;
    if (out === 'die') {
      pane.dead = true;
      return;
    }
    if (out === 'die-after-recording') {
      this.write(sessionId, [{ t: 'user', text: message, key: 'k-dying' }]);
      pane.dead = true;
      return;
    }
    // Written a moment later, as a CLI does, so the engine sees the turn arrive while it follows.
    setTimeout(() => this.write(sessionId, out), 5);
  }

  interrupt(pane: FakePane): void {
    const id = this.sessions.get(pane);
    if (id) setTimeout(() => this.write(id, this.onInterrupt), 5);
  }

  pressed(pane: FakePane, keys: string[]): void {
    const id = this.sessions.get(pane);
    const out = this.onKeys(keys);
    if (id && out.length) setTimeout(() => this.write(id, out), 5);
  }
}

class FakeObserver extends TranscriptTurnObserver<FakeRecord & { t: string }> {
  /** The fake CLI's model has answered nothing of this turn yet. */
  get awaitingModel(): boolean {
    return this.observation.phase === 'running' && this.lastAnswer === null;
  }

  protected classify(value: unknown): (FakeRecord & { t: string }) | null {
    const t = (value as { t?: unknown } | null)?.t;
    return typeof t === 'string' && ['user', 'answer', 'end', 'error', 'interrupt'].includes(t) ? (value as FakeRecord & { t: string }) : null;
  }

  protected normalise(text: string): string {
    return text;
  }

  protected whileWaiting(rec: FakeRecord & { t: string }): void {
    if (rec.t === 'user' && this.isOurPrompt(String(rec.text))) this.begin(String(rec.key ?? ''));
  }

  protected whileRunning(rec: FakeRecord & { t: string }): void {
    if (rec.t === 'answer') this.lastAnswer = String(rec.text);
    else if (rec.t === 'end') this.end('completed', this.lastAnswer, null);
    else if (rec.t === 'error') this.end('failed', null, String(rec.text));
    else if (rec.t === 'interrupt') this.end('interrupted', this.lastAnswer, 'the turn was interrupted');
    // A newer prompt closes a turn that never recorded its end.
    else if (rec.t === 'user' && rec.key !== this.turnKey) this.end('lost', null, 'a newer prompt started before this turn recorded its end');
  }
}

/** The fake CLI: a first '!' is a shell command, which a space keeps text. */
export const fakeMessageGuard: MessageGuard = {
  passesOver: 'blanks',
  leads: { '!': { means: 'a first "!" runs a shell command', readAt: 'start', action: 'space' }, '/': TEXT, '@': TEXT, '#': TEXT, '?': TEXT, '&': TEXT, '-': TEXT, '$': TEXT },
};

/** The fake CLI's input box: the row opening with `> `. */
export const fakeDraft: DraftControl = {
  read: (screen) => {
    const row = screen.lines.findLast((l) => l.startsWith('> '));
    return row === undefined ? null : row.slice(2).trim();
  },
  keys: ['End', 'C-u'],
};

export interface FakeAdapterOptions {
  structured?: (req: StructuredRunRequest) => Promise<StructuredTurnResult>;
  /** The structured transport's early start (StructuredTransport.start), when the fake has one. */
  structuredStart?: (req: StructuredStartRequest) => StartedStructuredTurn | null;
  /** How the fake CLI reads a message's first character (default: a first '!' gets a space). */
  messageGuard?: MessageGuard;
  promptRecordedWithinMs?: number;
  recordsFreshPromptLate?: (version: string) => boolean;
  stallKeys?: StallKeys;
  /** How the fake reads and clears its input box (default: `> ` row, End C-u); null: no way. */
  draft?: DraftControl | null;
  pasteSubmitDelayMs?: number | 'when-shown';
  afterInterruptKeys?: string[];
  afterFailKeys?: string[];
}

export function fakeAdapter(cli: FakeCli, opts: FakeAdapterOptions = {}): CliAdapter & { launches: LaunchRequest[]; prepared: number } {
  const adapter = {
    name: 'claude-code' as const,
    executable: 'fake-cli',
    capabilities: { tmuxContinuation: true as const, nativeResumeInTmux: true, structuredTransport: !!opts.structured, apiOnly: false, needsStableWorkingDir: true },
    envNames: [],
    folderTrust: { kind: 'none', why: 'a fake CLI' },
    launches: [] as LaunchRequest[],
    prepared: 0,
    async resolveCli() {
      return { path: FAKE_EXE, realPath: FAKE_EXE, version: '1.0.0' };
    },
    async prepare() {
      adapter.prepared++;
      return false;
    },
    launch(req: LaunchRequest) {
      adapter.launches.push(req);
      const sessionId = req.sessionId ?? 'minted';
      // A fresh launch carries the message in argv; a resume gets it pasted.
      return {
        argv: req.mode === 'fresh' ? ['fake-cli', req.mode, sessionId, req.message] : ['fake-cli', req.mode, sessionId],
        env: {},
        cwd: req.config.cwd,
        deliversMessage: req.mode === 'fresh',
        sessionId,
      };
    },
    async bindTranscript(req: { sessionId: string | null }) {
      if (!req.sessionId) return null;
      const file = cli.transcript(req.sessionId);
      return existsSync(file) ? { path: file, sessionId: req.sessionId } : null;
    },
    observeTurn(message: string, notBefore?: Date, match?: PromptMatch) {
      return new FakeObserver(message, notBefore, match);
    },
    messageGuard: opts.messageGuard ?? fakeMessageGuard,
    ...(opts.structured ? { structured: { run: opts.structured, ...(opts.structuredStart ? { start: opts.structuredStart } : {}) } } : {}),
    ...(opts.promptRecordedWithinMs ? { promptRecordedWithinMs: opts.promptRecordedWithinMs } : {}),
    ...(opts.recordsFreshPromptLate ? { recordsFreshPromptLate: opts.recordsFreshPromptLate } : {}),
    ...(opts.stallKeys ? { stallKeys: opts.stallKeys } : {}),
    ...(opts.pasteSubmitDelayMs !== undefined ? { pasteSubmitDelayMs: opts.pasteSubmitDelayMs } : {}),
    ...(opts.draft === null ? {} : { draft: opts.draft ?? fakeDraft }),
    ...(opts.afterInterruptKeys ? { afterInterruptKeys: opts.afterInterruptKeys } : {}),
    ...(opts.afterFailKeys ? { afterFailKeys: opts.afterFailKeys } : {}),
    async scriptedModelEnv() {
      return {};
    },
  };
  return adapter as CliAdapter & { launches: LaunchRequest[]; prepared: number };
}

/** Hooks that record what the engine reported, in order. */
export function recordingHooks(): EngineHooks & { events: ProviderEvent[]; details: Array<Record<string, unknown> | undefined>; statuses: string[]; handles: ProviderHandle[]; changes: PaneChange[] } {
  const hooks = {
    events: [] as ProviderEvent[],
    /** Each event's detail, in the order of `events`. */
    details: [] as Array<Record<string, unknown> | undefined>,
    statuses: [] as string[],
    handles: [] as ProviderHandle[],
    changes: [] as PaneChange[],
    async emit(event: ProviderEvent, detail?: Record<string, unknown>) {
      hooks.events.push(event);
      hooks.details.push(detail);
    },
    async onSending() {
      hooks.statuses.push('sending');
    },
    async onSent() {
      hooks.statuses.push('sent');
    },
    async onRecorded() {
      hooks.statuses.push('running');
    },
    async onHandleChanged(handle: ProviderHandle, change: PaneChange) {
      hooks.handles.push(handle);
      hooks.changes.push(change);
    },
  };
  return hooks;
}

export const fakeConfig = (cwd: string): SessionConfig => ({ cwd, model: null, systemPrompt: null, mcpConfigPath: null, toolPolicy: 'default' });

/** A real executable standing in for the pinned CLI (the engine checks it is still there, unchanged). */
export function fakeExecutable(): string {
  const file = path.join(scratchDirSync('fake-bin'), 'fake-cli');
  writeFileSync(file, '#!/bin/sh\necho "fake-cli 1.0.0"\n');
  chmodSync(file, 0o755);
  return file;
}

const FAKE_EXE = fakeExecutable();

export function providerHandle(patch: Partial<ProviderHandle> = {}): ProviderHandle {
  return {
    provider: 'claude-code',
    transport: 'tmux',
    nativeSessionId: null,
    pendingSessionId: 'sess-1',
    tmux: null,
    workingDir: { path: os.tmpdir(), realPath: os.tmpdir(), dev: 0, ino: 0 },
    projectDirId: null,
    model: null,
    status: 'active',
    cli: { path: FAKE_EXE, realPath: FAKE_EXE, version: '1.0.0' },
    transcript: null,
    signals: null,
    envNames: [],
    folderTrust: { kind: 'none', why: 'a fake CLI' },
    ...patch,
  };
}

/** One engine world: a fake CLI, its tmux and adapter, and a request builder. */
export function fakeWorld(opts: FakeAdapterOptions = {}) {
  const cli = new FakeCli();
  const tmux = new FakeTmux('/fake/socket', cli);
  const servers = new Map<string, FakeTmux>([[tmux.socket, tmux]]);
  const factory: TmuxFactory = (socket) => servers.get(socket) ?? new FakeTmux(socket, cli);
  const adapter = fakeAdapter(cli, opts);
  const hooks = recordingHooks();
  const request = (handle: ProviderHandle, message: string, patch: Partial<TurnRequest> = {}): TurnRequest => ({
    adapter,
    handle,
    config: fakeConfig(os.tmpdir()),
    message,
    intent: { kind: 'deliver' },
    env: {},
    timeoutMs: 5000,
    hooks,
    tmux: factory,
    tmuxSocket: tmux.socket,
    paneName: 'cal-h-1',
    ...patch,
  });
  return { cli, tmux, adapter, hooks, request };
}

/**
 * The agent-session layer over a fake CLI and a fake tmux, in a scratch folder with its own state
 * directory (no binaries). The caller removes `root` (removeScratch) when done.
 */
export async function fakeSessions(prefix: string) {
  const root = await scratchDir(prefix);
  const store = await StateStore.open(path.join(root, 'state'));
  const cli = new FakeCli();
  const tmux = new FakeTmux('/fake/socket', cli);
  const adapter = fakeAdapter(cli);
  const sessions = new AgentSessions(store, { tmux: () => tmux, adapter: () => adapter });
  return { root, store, cli, tmux, adapter, sessions };
}
