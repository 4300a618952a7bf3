import { CalError } from '../errors.js';
import type { PaneRecord, PinnedCli, ProviderHandle, TmuxLocation } from '../handles/schema.js';
import type { ToolActivity } from '../state/turns.js';
import { TmuxServer } from '../tmux/tmux.js';
import { paneMessage } from './pane-text.js';
import { lastLineBoundary, readJsonlFrom, waitForChange } from '../transcripts/jsonl-tail.js';
import type { CliAdapter, SessionConfig, TurnObserver, TurnProgress } from '../adapters/types.js';
import { checkPinned } from '../adapters/resolve.js';

/**
 * Provider-level continuation (design §4): given a provider handle and one message, paste into
 * the live pane, or relaunch with the CLI's native resume when the pane is gone, and follow the
 * turn in the CLI's own transcript. Completion and the answer come only from that transcript.
 */
export type ProviderEvent = 'resuming' | 'running' | 'completed' | 'failed' | 'lost_tmux' | 'resume_unavailable' | 'stale_handle' | 'interrupted' | 'lost';

export interface TurnOutcome {
  status: 'completed' | 'failed' | 'interrupted' | 'lost';
  answer: string | null;
  error: string | null;
  turnKey: string | null;
  tools: ToolActivity[];
}

export interface EngineHooks {
  emit(event: ProviderEvent, detail?: Record<string, unknown>): Promise<void>;
  /** Called right before the message leaves cal (turn status `sending`). */
  onSending(): Promise<void>;
  /** Called once the message has left cal (pasted, or handed to a launch). */
  onSent?(): Promise<void>;
  /** Called once the CLI recorded our message (turn status `running`, with the CLI's key). */
  onRecorded(turnKey: string | null): Promise<void>;
  /** Called whenever the provider handle changed and must be saved (pane, id, offset). */
  onHandleChanged(handle: ProviderHandle, panes: PaneChange): Promise<void>;
  /** Partial progress for --stream. */
  onProgress?(progress: TurnProgress): void;
}

export interface PaneChange {
  added?: PaneRecord;
  archived?: { paneId: string; reason: string };
}

export interface EngineOptions {
  tmuxSocket: string;
  /** tmux session name for a new pane (unique per handle and launch). */
  paneName: string;
  env: Record<string, string>;
  timeoutMs: number;
  hooks: EngineHooks;
}

const POLL_MS = 250;
/** How long the CLI may take to record a pasted message before Enter is sent once more. */
const RESUBMIT_AFTER_MS = 3000;

export async function startTmuxSession(
  adapter: CliAdapter,
  handle: ProviderHandle,
  config: SessionConfig,
  message: string,
  opts: EngineOptions,
): Promise<{ handle: ProviderHandle; outcome: TurnOutcome }> {
  if (!handle.cli) throw new CalError('internal', 'provider handle without a pinned CLI');
  await adapter.prepare(opts.env, config);
  return launchAndFollow(adapter, handle, config, message, 'fresh', opts);
}

export async function continueTmuxSession(
  adapter: CliAdapter,
  handle: ProviderHandle,
  config: SessionConfig,
  message: string,
  opts: EngineOptions,
): Promise<{ handle: ProviderHandle; outcome: TurnOutcome }> {
  if (!handle.cli) throw new CalError('internal', 'provider handle without a pinned CLI');
  const tmux = new TmuxServer(opts.tmuxSocket);
  if (handle.tmux && (await tmux.isPaneAlive(handle.tmux.paneId))) {
    return pasteAndFollow(adapter, tmux, handle, config, message, opts);
  }
  if (handle.tmux) {
    await opts.hooks.emit('lost_tmux', { pane: handle.tmux.paneId });
    const archived = handle.tmux;
    // The dead pane may linger (remain-on-exit): clear it so it cannot be mistaken for live.
    await tmux.killSession(archived.session);
    handle = { ...handle, tmux: null, status: 'lost' };
    await opts.hooks.onHandleChanged(handle, { archived: { paneId: archived.paneId, reason: 'pane gone' } });
  }
  if (!handle.nativeSessionId || !handle.transcript) {
    throw new CalError(
      'non_continuable',
      `the ${adapter.name} session never recorded a first turn, so it has no native id to resume; start a new session`,
    );
  }
  await checkPinned(handle.cli as PinnedCli, opts.env, adapter.executable);
  await adapter.prepare(opts.env, config);
  await opts.hooks.emit('resuming', { nativeSessionId: handle.nativeSessionId });
  return launchAndFollow(adapter, handle, config, message, 'resume', opts);
}

async function launchAndFollow(
  adapter: CliAdapter,
  handle: ProviderHandle,
  config: SessionConfig,
  message: string,
  mode: 'fresh' | 'resume',
  opts: EngineOptions,
): Promise<{ handle: ProviderHandle; outcome: TurnOutcome }> {
  // What reaches a pane (argv echoed by the TUI, or a paste) is inert text; the transcript is
  // matched against that same text (docs/security.md).
  message = paneMessage(message);
  const tmux = new TmuxServer(opts.tmuxSocket);
  const plan = adapter.launch({
    cli: handle.cli as PinnedCli,
    env: opts.env,
    config,
    mode,
    sessionId: mode === 'resume' ? handle.nativeSessionId : handle.pendingSessionId,
    message: adapter.pasteText(message),
  });
  await opts.hooks.onSending();
  const sentAt = new Date(Date.now() - 1000);
  const pane = await tmux.newPane({ session: opts.paneName, cwd: plan.cwd, argv: plan.argv, env: plan.env });
  const location: TmuxLocation = { socket: opts.tmuxSocket, session: pane.session, paneId: pane.paneId };
  handle = { ...handle, tmux: location, status: 'active', pendingSessionId: mode === 'fresh' ? plan.sessionId : handle.pendingSessionId };
  await opts.hooks.onHandleChanged(handle, {
    added: { tmux: location, startedAt: new Date().toISOString(), endedAt: null, endReason: null, launch: mode },
  });
  if (!plan.deliversMessage) {
    await pasteAndSubmit(adapter, tmux, pane.paneId, message);
  }
  await opts.hooks.onSent?.();
  return follow(adapter, tmux, handle, config, message, mode, sentAt, opts, !plan.deliversMessage);
}

async function pasteAndFollow(
  adapter: CliAdapter,
  tmux: TmuxServer,
  handle: ProviderHandle,
  config: SessionConfig,
  message: string,
  opts: EngineOptions,
): Promise<{ handle: ProviderHandle; outcome: TurnOutcome }> {
  message = paneMessage(message);
  await opts.hooks.onSending();
  const sentAt = new Date(Date.now() - 1000);
  await pasteAndSubmit(adapter, tmux, (handle.tmux as TmuxLocation).paneId, message);
  await opts.hooks.onSent?.();
  return follow(adapter, tmux, handle, config, message, 'paste', sentAt, opts, true);
}

/** Bracketed paste, then Enter: at once, or after the pause the adapter declares. */
async function pasteAndSubmit(adapter: CliAdapter, tmux: TmuxServer, paneId: string, message: string): Promise<void> {
  const delay = adapter.pasteSubmitDelayMs ?? 0;
  await tmux.paste(paneId, adapter.pasteText(message), delay <= 0);
  if (delay > 0) {
    await new Promise((resolve) => setTimeout(resolve, delay));
    await tmux.sendKeys(paneId, ['Enter']);
  }
}

/** What the CLI's transcript says about a turn, read without sending anything (for recover). */
export interface RecordedTurn {
  observation: TurnObserver['observation'];
  tools: TurnObserver['tools'];
  paneAlive: boolean;
  /** The transcript was bound now (a first turn whose id was not yet on the handle). */
  handle: ProviderHandle;
}

export async function observeRecordedTurn(
  adapter: CliAdapter,
  handle: ProviderHandle,
  config: SessionConfig,
  message: string,
  sentAt: Date,
  env: Record<string, string>,
): Promise<RecordedTurn> {
  message = paneMessage(message);
  const paneAlive = handle.tmux ? await new TmuxServer(handle.tmux.socket).isPaneAlive(handle.tmux.paneId) : false;
  const observer = adapter.observeTurn(message, sentAt);
  if (!handle.transcript) {
    const bound = await adapter.bindTranscript({ env, config, sessionId: handle.pendingSessionId, message, sentAt });
    if (bound) handle = { ...handle, nativeSessionId: bound.sessionId, pendingSessionId: null, transcript: { path: bound.path, offset: 0 } };
  }
  if (handle.transcript) {
    const file = handle.transcript.path;
    let offset = handle.transcript.offset;
    // Chunk by chunk: a long transcript is never loaded whole.
    for (;;) {
      const read = await readJsonlFrom(file, offset);
      if (read.offset === offset) break;
      for (const rec of read.records) {
        observer.feed(rec.value);
        offset = rec.endOffset;
        if (observer.observation.phase === 'ended') break;
      }
      if (observer.observation.phase !== 'ended') offset = read.offset;
      if (observer.observation.phase === 'ended') {
        handle = { ...handle, transcript: { path: file, offset } };
        break;
      }
    }
  }
  return { observation: observer.observation, tools: observer.tools, paneAlive, handle };
}

/**
 * Moves the stored offset past everything the transcript holds now: the records of a turn that
 * was lost belong to the past, so the next turn (even with the same text) is matched after them.
 */
export async function skipPastTranscript(handle: ProviderHandle): Promise<ProviderHandle> {
  if (!handle.transcript) return handle;
  const end = await lastLineBoundary(handle.transcript.path);
  return end > handle.transcript.offset ? { ...handle, transcript: { ...handle.transcript, offset: end } } : handle;
}

/**
 * Follows a turn the CLI already has (recover, or a cal that died mid-turn): nothing is sent;
 * the turn ends from the transcript, or as lost when the pane dies first.
 */
export async function awaitRecordedTurn(
  adapter: CliAdapter,
  handle: ProviderHandle,
  config: SessionConfig,
  message: string,
  sentAt: Date,
  opts: EngineOptions,
): Promise<{ handle: ProviderHandle; outcome: TurnOutcome }> {
  if (!handle.tmux) throw new CalError('lost', 'the turn has no pane to wait on');
  const tmux = new TmuxServer(handle.tmux.socket);
  return follow(adapter, tmux, handle, config, paneMessage(message), 'paste', sentAt, opts, false);
}

/**
 * Follows the transcript from the stored offset until our turn ends, the pane dies, or the
 * timeout passes. The stored offset moves only past records this turn consumed.
 */
async function follow(
  adapter: CliAdapter,
  tmux: TmuxServer,
  handle: ProviderHandle,
  config: SessionConfig,
  message: string,
  mode: 'fresh' | 'resume' | 'paste',
  sentAt: Date,
  opts: EngineOptions,
  pasted: boolean,
): Promise<{ handle: ProviderHandle; outcome: TurnOutcome }> {
  const observer = adapter.observeTurn(message, sentAt);
  const paneId = (handle.tmux as TmuxLocation).paneId;
  const deadline = Date.now() + opts.timeoutMs;
  let transcriptPath = handle.transcript?.path ?? null;
  let offset = handle.transcript?.offset ?? 0;
  let recorded = false;
  let resubmits = 0;
  let lastPaneCheck = 0;

  for (;;) {
    if (!transcriptPath) {
      const bound = await adapter.bindTranscript({ env: opts.env, config, sessionId: handle.pendingSessionId, message, sentAt });
      if (bound) {
        transcriptPath = bound.path;
        offset = 0;
        handle = { ...handle, nativeSessionId: bound.sessionId, pendingSessionId: null, transcript: { path: bound.path, offset: 0 } };
        await opts.hooks.onHandleChanged(handle, {});
      }
    }
    if (transcriptPath) {
      const read = await readJsonlFrom(transcriptPath, offset);
      if (read.truncated) {
        throw new CalError('resume_unavailable', `the ${adapter.name} transcript ${transcriptPath} is shorter than what cal already read: it was replaced or truncated`);
      }
      for (const rec of read.records) {
        observer.feed(rec.value);
        offset = rec.endOffset;
        if (!recorded && observer.observation.phase !== 'waiting') {
          recorded = true;
          await opts.hooks.onRecorded(observerKey(observer));
          await opts.hooks.emit('running', { turnKey: observer.observation.turnKey });
        }
        // Progress after every record, so --stream shows a turn in the order the CLI wrote it,
        // even when the whole turn arrives in one read.
        if (recorded) opts.hooks.onProgress?.(observer);
        if (observer.observation.phase === 'ended') break;
      }
      // Lines that are not records (torn, oversized, garbage) are passed over too: otherwise more
      // of them than one read takes would be read again on every poll, and the tail would stall.
      if (observer.observation.phase !== 'ended') offset = read.offset;
      if (observer.observation.phase === 'ended') {
        const obs = observer.observation;
        handle = { ...handle, transcript: { path: transcriptPath, offset }, status: 'idle' };
        await opts.hooks.onHandleChanged(handle, {});
        return { handle, outcome: { status: obs.status, answer: obs.answer, error: obs.error, turnKey: obs.turnKey, tools: observer.tools } };
      }
    }

    const now = Date.now();
    if (now - lastPaneCheck >= 500) {
      lastPaneCheck = now;
      const state = await tmux.paneState(paneId);
      if (!state.exists || state.dead) {
        // One last read: the CLI may have written its end record while exiting.
        if (transcriptPath) {
          const last = await readJsonlFrom(transcriptPath, offset);
          for (const rec of last.records) {
            observer.feed(rec.value);
            offset = rec.endOffset;
            if (observer.observation.phase === 'ended') break;
          }
          if (observer.observation.phase === 'ended') continue;
        }
        const screen = state.exists ? lastWords(await tmux.capture(paneId)) : '';
        handle = { ...handle, status: 'lost', transcript: transcriptPath ? { path: transcriptPath, offset } : handle.transcript };
        await opts.hooks.onHandleChanged(handle, {});
        if (!recorded) {
          if (mode === 'resume') {
            await opts.hooks.emit('resume_unavailable', { screen });
            throw new CalError('resume_unavailable', `${adapter.name} refused to resume session ${handle.nativeSessionId}${screen ? `: ${screen}` : ''}`);
          }
          throw new CalError('lost', `${adapter.name} exited before it recorded the message${screen ? `: ${screen}` : ''}`);
        }
        return {
          handle,
          outcome: { status: 'lost', answer: null, error: `the ${adapter.name} process ended before the turn recorded its end`, turnKey: observerKey(observer), tools: observer.tools },
        };
      }
      if (pasted && !recorded && now - sentAt.getTime() > RESUBMIT_AFTER_MS * (resubmits + 1) && resubmits < 2) {
        // The TUI can swallow an Enter that arrives while it is busy redrawing; the transcript
        // (not the screen) says the message was not taken, so press Enter once more.
        resubmits++;
        await tmux.sendKeys(paneId, ['Enter']);
      }
    }
    if (Date.now() > deadline) {
      // The stored offset stays where this turn began, so `cal recover` can settle it later.
      throw new CalError('timeout', `no end of turn from ${adapter.name} within ${Math.round(opts.timeoutMs / 1000)}s; the turn may still finish (see cal inspect)`);
    }
    await waitForChange(transcriptPath ?? '/nonexistent-transcript', POLL_MS, 100);
  }
}

function observerKey(observer: TurnObserver): string | null {
  const obs = observer.observation;
  return obs.phase === 'waiting' ? null : obs.turnKey;
}

/** The last non-empty screen lines of a dead pane, as one line (a diagnostic, not an answer). */
function lastWords(screen: string): string {
  const lines = screen.split('\n').map((l) => l.trim()).filter(Boolean).filter((l) => !/^Pane is dead/.test(l));
  return lines.slice(-3).join(' / ').slice(0, 400);
}
