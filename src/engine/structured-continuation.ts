import { CalError } from '../errors.js';
import { prepareLaunch } from './folder-trust.js';
import type { PinnedCli, ProviderHandle } from '../handles/schema.js';
import { checkPinned } from '../adapters/resolve.js';
import { acpTransportOf } from '../adapters/acp-transport.js';
import { processRuns, processStartTime } from '../util/process-identity.js';
import { feedTranscript } from './transcript-feed.js';
import type { StartedStructuredTurn } from '../adapters/types.js';
import { discardEarlyLaunch, recordNextLaunch } from '../adapters/early-launch.js';
import type { EngineResult, TurnRequest } from './types.js';

/**
 * Structured transport (design §4.6): one CLI process per turn in its JSON mode, with the CLI's
 * own resume after the first turn. No pane; the answer comes from the CLI's event stream.
 *
 * The CLI writes to files and holds its whole message once it is sent (adapters/structured-process.ts),
 * so it outlives a cal killed mid-turn and finishes the turn in its transcript. What a later
 * `cal recover` needs to settle that turn without sending it again is written before cal waits:
 * the turn is `running` before the launch (the CLI may hold the message from then on), and the
 * CLI's pid and start time are on the handle as soon as the process exists.
 */
export async function runStructuredTurn(req: TurnRequest, text: string): Promise<EngineResult> {
  const { adapter, hooks } = req;
  let handle = req.handle;
  // A handle on the ACP transport runs the same way, through cal's ACP client instead of the CLI's JSON mode.
  const transport = handle.transport === 'acp' ? acpTransportOf(adapter) : adapter.structured;
  if (!transport) throw new CalError('usage', `${adapter.name} has no structured transport`);
  let cli = handle.cli as PinnedCli;
  const mode = handle.nativeSessionId ? 'resume' : 'fresh';
  if (mode === 'resume') {
    cli = await checkPinned(cli, req.env, adapter.executable, adapter.readVersion);
    await hooks.emit('resuming', { nativeSessionId: handle.nativeSessionId });
  }
  await prepareLaunch(adapter, req.env, req.config, 'structured');
  // The previous turn's CLI may still be finishing after its end event: two processes never
  // work on one session, so nothing is sent before it has exited.
  if (handle.cliProcess) await finishedCli(handle.cliProcess);
  await hooks.onSending();
  await hooks.onRecorded(null);
  await hooks.emit('running', {});
  let recording: Promise<void> | null = null;
  let spawned: { pid: number; startTime: string | null } | null = null;
  const onSpawned = (pid: number) => {
    spawned = { pid, startTime: processStartTime(pid) };
    recording = hooks.onHandleChanged({ ...handle, cli, cliProcess: spawned }, {});
  };
  const started = mode === 'resume' ? req.started : null;
  let result;
  try {
    result = await (started ?? transport).run({
      cli,
      env: req.env,
      config: req.config,
      mode,
      // The first turn uses the id chosen up front (on the handle since start), where the CLI
      // lets cal choose one: recover finds its transcript by it.
      sessionId: mode === 'resume' ? handle.nativeSessionId : handle.pendingSessionId,
      message: text,
      timeoutMs: req.timeoutMs,
      onSpawned,
      knownTranscript: handle.transcript?.path ?? null,
      ...(req.sessionDir ? { sessionDir: req.sessionDir } : {}),
      ...(req.signal ? { signal: req.signal } : {}),
      ...(hooks.onProgress ? { onProgress: hooks.onProgress } : {}),
      // Fire and forget: the event log is written in order, and the turn does not wait on it.
      onRetry: (retry) => void hooks.emit('retrying', { attempt: retry.attempt, maxRetries: retry.maxRetries, delayMs: retry.delayMs, errorStatus: retry.errorStatus }).catch(() => {}),
    });
  } catch (caught) {
    const err = cancelledBeforeTaken(caught, req.signal, adapter.name);
    // A process that has ended leaves the record, so nothing later waits on a pid that is gone;
    // one still finishing after its end event (the adapter failed the turn on what it read)
    // stays on it, so the next turn waits for it as after any other end event.
    if (recording) {
      await recording;
      const proc = spawned as { pid: number; startTime: string | null } | null;
      await hooks.onHandleChanged({ ...handle, cli, cliProcess: proc && processRuns(proc.pid, proc.startTime) ? proc : null }, {});
    }
    throw err;
  }
  if (recording) await recording;
  handle = {
    ...handle,
    cli,
    nativeSessionId: result.sessionId,
    pendingSessionId: null,
    transcript: result.transcriptPath ? { path: result.transcriptPath, offset: handle.transcript?.offset ?? 0 } : handle.transcript,
    // A CLI still finishing after its end event stays on record until the next turn sees it gone.
    cliProcess: result.cliRunning ? spawned : null,
    status: 'idle',
  };
  await Promise.all([hooks.onHandleChanged(handle, {}), recordNext(req, handle, mode === 'fresh')]);
  return { handle, outcome: { status: result.status, answer: result.answer, error: result.error, turnKey: null, tools: result.tools } };
}

/**
 * Records the launch the handle's next resume makes, where the adapter starts its CLI ahead
 * (StructuredTransport.nextLaunch), for cal's entry to start it before cal's modules load.
 */
async function recordNext(req: TurnRequest, handle: ProviderHandle, fresh: boolean): Promise<void> {
  const next = req.adapter.structured?.nextLaunch;
  if (!next || !req.sessionDir || !handle.nativeSessionId || !handle.cli) return;
  // A first run may rewrite the CLI's config (Claude Code 2.1.328 drops a flag cal pre-answers):
  // answered again now, the next continue finds nothing to write under the CLI its entry started.
  // A failure here is the next continue's to report, not this finished turn's: nothing recorded.
  if (fresh && !(await prepareLaunch(req.adapter, req.env, req.config, 'structured').then(() => true, () => false))) return;
  const launch = next({ cli: handle.cli, env: req.env, config: req.config, mode: 'resume', sessionId: handle.nativeSessionId, knownTranscript: handle.transcript?.path ?? null, sessionDir: req.sessionDir });
  if (launch) recordNextLaunch(req.sessionDir, req.adapter.name, launch, req.env, handle.transcript?.path ?? null);
}

/**
 * A cancel that reaches a CLI before it took the message makes some CLIs fail the prompt with
 * words of their own (Copilot 1.0.102, SIGINT while it loads a resumed session: "queued work
 * belongs to a retired queue", "LSP session … is closed", "Cannot invoke native session after
 * disposal has started", exit 0): for the caller that is their cancel, not a failed turn, and
 * the message was not taken either way.
 */
function cancelledBeforeTaken(err: unknown, signal: AbortSignal | undefined, cli: string): unknown {
  if (!signal?.aborted || !(err instanceof CalError) || (err.kind !== 'turn_failed' && err.kind !== 'lost')) return err;
  return new CalError('interrupted', `cancelled by the caller before ${cli} took the message (${err.message})`);
}

/** How long a CLI that already ended its turn may take to exit before it is killed. */
const FINISH_WAIT_MS = 10_000;
const FINISH_POLL_MS = 5;

/**
 * Returns once a CLI process that ended its turn on its end event has exited (a zombie has); one
 * still there after FINISH_WAIT_MS is SIGKILLed: it has given its answer and only holds the session.
 */
async function finishedCli(proc: { pid: number; startTime: string | null }): Promise<void> {
  if (proc.pid === process.pid) return;
  const deadline = Date.now() + FINISH_WAIT_MS;
  while (processRuns(proc.pid, proc.startTime)) {
    if (Date.now() > deadline) {
      try {
        process.kill(proc.pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
      return;
    }
    await new Promise((r) => setTimeout(r, FINISH_POLL_MS));
  }
}

/**
 * Starts the CLI of a resumed structured turn ahead of the turn (StructuredTransport.start), so
 * that what cal does before the send (the turn record, the handle's lock, earlier turns, the
 * durable records of the send) runs while the CLI starts. Nothing is sent: the message follows
 * in runStructuredTurn, once its records are on disk, and a start that is not used is discarded.
 * Null where the adapter cannot, the handle is not a resumable structured session, or a step
 * fails: then the turn launches as usual, and reports the failure there.
 */
export async function startStructuredTurn(req: Pick<TurnRequest, 'adapter' | 'handle' | 'config' | 'env' | 'sessionDir'>): Promise<StartedStructuredTurn | null> {
  const { adapter, handle } = req;
  const start = adapter.structured?.start;
  // A CLI on record (the previous turn's, finishing; or one a killed cal left working) does not
  // stop the start: nothing is sent before it is gone (runStructuredTurn, or the earlier turn's
  // settling, after which the changed transcript discards this start).
  if (!start || handle.transport !== 'structured' || !handle.nativeSessionId || !handle.cli) return null;
  try {
    const cli = await checkPinned(handle.cli, req.env, adapter.executable, adapter.readVersion);
    // Before the start: the CLI reads its config when it starts, not when its message comes. A
    // CLI cal's entry started already read it before anything this wrote (early-launch.ts).
    if (await prepareLaunch(adapter, req.env, req.config, 'structured')) discardEarlyLaunch("the launch's preparation wrote what the CLI reads at its start");
    return start({
      cli,
      env: req.env,
      config: req.config,
      mode: 'resume',
      sessionId: handle.nativeSessionId,
      knownTranscript: handle.transcript?.path ?? null,
      ...(req.sessionDir ? { sessionDir: req.sessionDir } : {}),
    });
  } catch {
    return null;
  }
}

/** How often a structured turn that another cal launched is looked at while its CLI works. */
const AWAIT_POLL_MS = 100;

/**
 * Follows a structured turn whose cal died while its CLI went on (intent `await`, from recover
 * or the next continue): the transcript is read until the turn ends there, sending nothing. A
 * CLI process that is gone before the transcript records the end leaves the turn `lost`.
 */
export async function awaitStructuredTurn(req: TurnRequest, text: string, sentAt: Date): Promise<EngineResult> {
  const { adapter, hooks } = req;
  let handle: ProviderHandle = req.handle;
  const proc = handle.cliProcess ?? null;
  const observer = adapter.observeTurn(text, handle.transcript ? undefined : sentAt);
  let offset = handle.transcript?.offset ?? 0;
  const deadline = Date.now() + req.timeoutMs;
  for (;;) {
    // Liveness first, the transcript after: a CLI that ends in between has written its end.
    const alive = proc !== null && processRuns(proc.pid, proc.startTime);
    if (!handle.transcript) {
      const bound = await adapter.bindTranscript({ cli: handle.cli, env: req.env, config: req.config, sessionId: handle.pendingSessionId, message: text, sentAt });
      if (bound) {
        handle = { ...handle, nativeSessionId: bound.sessionId, pendingSessionId: null, transcript: { path: bound.path, offset: 0 } };
        offset = 0;
      }
    }
    if (handle.transcript) {
      await adapter.refreshTranscript?.(handle.transcript.path, handle.cli);
      const fed = await feedTranscript(handle.transcript.path, offset, observer);
      if (fed.truncated) throw new CalError('lost', `the transcript ${handle.transcript.path} was truncated or replaced while the turn ran`);
      offset = fed.offset;
    }
    const obs = observer.observation;
    if (obs.phase === 'ended') {
      handle = { ...handle, transcript: handle.transcript ? { ...handle.transcript, offset } : null, cliProcess: null, status: 'idle' };
      await hooks.onHandleChanged(handle, {});
      return { handle, outcome: { status: obs.status, answer: obs.answer, error: obs.error, turnKey: obs.turnKey, tools: observer.tools } };
    }
    if (!alive) {
      await hooks.onHandleChanged({ ...handle, cliProcess: null }, {});
      throw new CalError('lost', `the ${adapter.name} process ended before its transcript recorded the end of the turn`);
    }
    if (Date.now() > deadline) throw new CalError('timeout', `the ${adapter.name} process did not end the turn within ${Math.round(req.timeoutMs / 1000)}s`);
    hooks.onProgress?.({ observation: obs, tools: observer.tools, partialAnswer: observer.partialAnswer });
    await new Promise((r) => setTimeout(r, AWAIT_POLL_MS));
  }
}
