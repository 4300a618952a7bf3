import { randomBytes } from '../util/random.js';
import type { CliAdapter, LaunchRequest, TurnObserver } from '../adapters/types.js';
import { preAnsweredDialogs, pressOneByOne } from './pane-keys.js';
import { CalError } from '../errors.js';
import type { PinnedCli, ProviderHandle, TmuxLocation } from '../handles/schema.js';
import { waitForChange } from '../transcripts/jsonl-tail.js';
import { checkArgvSize, paneCommand } from './launch-script.js';
import { awaitEmptyBox, clearDraft, enterDropped, pasteAndSubmit, showsEmptyBox } from './draft.js';
import type { PreparedMessage } from './message.js';
import { PANE_TAG_ENV, samePane } from './tmux-control.js';
import { feedSignals, feedTranscript } from './transcript-feed.js';
import { processRuns, processStartTime } from '../util/process-identity.js';
import { timingMark } from '../util/timing.js';
import type { EngineResult, TurnRequest } from './types.js';
import { lastWords } from './last-words.js';
export { lastWords };

/**
 * The tmux transport's mechanics for one turn: launch a pane (fresh or native resume), or paste
 * into the live one, then follow the CLI's own transcript until the turn ends. Which of these
 * happens is decided in decision.ts; completion and the answer come only from the transcript.
 */
const POLL_MS = 250;
/** How long a TUI whose launch cannot carry the message may take to draw its input box. */
const LAUNCH_BOX_WAIT_MS = 90_000;
const PANE_CHECK_MS = 500;
/**
 * How often tmux itself is asked about a pane whose CLI process still runs. The pane runs the
 * CLI (the launch script execs it), so while that process lives, known by pid and start time,
 * the pane has not died; each question to tmux is a client process (about 4 ms of CPU here), twice
 * a second for a whole turn, on every pane at once. This catches a pane that went away around a
 * CLI that lives on.
 */
const PANE_RECHECK_MS = 5000;
/** How long the CLI may take to record a pasted message before Enter is sent once more. */
const RESUBMIT_AFTER_MS = 3000;
/**
 * After an interrupt that cal did not send, how long its CLI has to exit before the interrupt is
 * taken as a person's (Escape at the pane): a CLI killed mid-turn that records an interrupt on its
 * way out (Pi 1.x on SIGHUP) exits at once after it; a person's Escape leaves the CLI running.
 */
const INTERRUPT_DEATH_MS = 1000;
/** After a cancel, how long the CLI has to record its own interrupt before cal settles the turn. */
const CANCEL_GRACE_MS = 10_000;
/**
 * The same for a turn with nothing streamed yet that records nothing after the Escape: a request
 * the model has not begun to answer is dropped without a record by some CLIs (Claude Code 2.x
 * writes no interrupt then, measured in issue 41), so waiting the whole grace proves nothing.
 * Anything the CLI records after the Escape brings the full grace back.
 */
const QUIET_CANCEL_GRACE_MS = 1500;
/**
 * How long a transcript cal has bound may be missing before the turn ends: the CLI cannot record
 * the turn then (measured: Pi 1.6.0 whose session folder was deleted shows `Error: ENOENT` and
 * writes nothing more; Codex writes on into the unlinked rollout it holds open), and waiting for
 * the timeout proves nothing. No CLI cal drives replaces its transcript by deleting it first
 * (those that rewrite it rename over it), so a second is plenty.
 */
const TRANSCRIPT_GONE_MS = 1500;
/** Then, how long a CLI refusing to resume that session has to end its pane with its own words. */
const REFUSAL_EXIT_MS = 2500;
/** Between the keys that stop a failing CLI's retries and those that empty its input. */
const AFTER_FAIL_PAUSE_MS = 1000;

type Mode = 'fresh' | 'resume' | 'paste';

export async function launchAndFollow(req: TurnRequest, msg: PreparedMessage, mode: 'fresh' | 'resume'): Promise<EngineResult> {
  const { adapter, hooks } = req;
  const tmux = req.tmux(req.tmuxSocket);
  let handle = req.handle;
  const launchReq: LaunchRequest = {
    cli: handle.cli as PinnedCli,
    env: req.env,
    config: req.config,
    mode,
    sessionId: mode === 'resume' ? handle.nativeSessionId : handle.pendingSessionId,
    message: msg.typed,
    ...(req.sessionDir ? { sessionDir: req.sessionDir } : {}),
  };
  const plan = adapter.launch(launchReq);
  checkArgvSize(plan.argv, 'the message');
  await adapter.beforeLaunch?.(launchReq, plan);
  const command = req.sessionDir ? await paneCommand(req.sessionDir, plan.argv) : plan.argv;
  await hooks.onSending();
  const sentAt = new Date(Date.now() - 1000);
  // A session of this name is this handle's own pane, launched by a cal that died before it
  // recorded the pane: it must not run beside the new one (two CLIs on one session).
  await tmux.killSession(req.paneName);
  const tag = `${req.paneName.replace(/[^a-z0-9-]/g, '')}-${randomBytes(4).toString('hex')}`.slice(-64);
  const pane = await tmux.newPane({ session: req.paneName, cwd: plan.cwd, argv: command, env: { ...plan.env, [PANE_TAG_ENV]: tag } });
  await hooks.onPaneLaunched?.();
  const location: TmuxLocation = { socket: tmux.socket, session: pane.session, paneId: pane.paneId, panePid: pane.pid, tag };
  handle = {
    ...handle,
    tmux: location,
    status: 'active',
    pendingSessionId: mode === 'fresh' ? plan.sessionId : handle.pendingSessionId,
    signals: plan.signalFile ? { path: plan.signalFile, offset: handle.signals?.path === plan.signalFile ? handle.signals.offset : 0 } : handle.signals,
  };
  await hooks.onHandleChanged(handle, {
    added: { tmux: location, startedAt: new Date().toISOString(), endedAt: null, endReason: null, launch: mode },
  });
  if (!plan.deliversMessage) {
    if (!(await awaitEmptyBox(req, location, Math.min(req.timeoutMs, LAUNCH_BOX_WAIT_MS)))) {
      throw new CalError('turn_failed', `${req.adapter.name} launched but showed no empty input box within ${Math.round(Math.min(req.timeoutMs, LAUNCH_BOX_WAIT_MS) / 1000)}s (it died or a dialog is open); nothing was pasted`);
    }
    await pasteAndSubmit(req, location, msg.typed, 'launched', req.adapter.draft !== undefined);
  }
  await hooks.onSent?.();
  return follow({ ...req, handle }, msg.text, mode, sentAt, !plan.deliversMessage);
}

/**
 * Pastes into the live pane and follows the turn; null when the pane turned out not to be the
 * handle's own or not alive (tmux checks that with the paste: nothing was sent, and the caller
 * decides again with the pane gone). The turn record says `sending` before the paste either way.
 */
export async function pasteAndFollow(req: TurnRequest, msg: PreparedMessage): Promise<EngineResult | null> {
  const location = req.handle.tmux as TmuxLocation;
  // Before the turn says `sending`: a draft that cannot be cleared is refused with nothing sent.
  const draft = await clearDraft(req, location);
  timingMark('draft-checked');
  if (draft.pane === 'gone') return null;
  // Never thrown away in silence: the draft's text goes in the event log (cal events shows it).
  if (draft.cleared) await req.hooks.emit('draft_cleared', { ...draft.draft });
  await req.hooks.onSending();
  const sentAt = new Date(Date.now() - 1000);
  if (!(await pasteAndSubmit(req, location, msg.typed, 'if-own', draft.cleared))) return null;
  await req.hooks.onSent?.();
  // The pane was found alive with the paste: the first look at it is due one check interval
  // later, not in the same breath as the paste.
  return follow(req, msg.text, 'paste', sentAt, true, Date.now());
}

/** Follows a turn the CLI already has (a cal that died mid-turn): nothing is sent. */
export async function awaitRecorded(req: TurnRequest, text: string, sentAt: Date): Promise<EngineResult> {
  if (!req.handle.tmux) throw new CalError('lost', 'the turn has no pane to wait on');
  return follow(req, text, 'paste', sentAt, false);
}

/**
 * Follows the transcript from the stored offset until our turn ends, the pane dies, the caller
 * cancels or the timeout passes. The stored offset moves only past records this turn consumed.
 */
async function follow(req: TurnRequest, text: string, mode: Mode, sentAt: Date, pasted: boolean, paneCheckedAt = 0): Promise<EngineResult> {
  const { adapter, hooks } = req;
  let handle = req.handle;
  const location = handle.tmux as TmuxLocation;
  const tmux = req.tmux(location.socket);
  // Sent now (not a turn followed again): the first prompt the CLI records after it is ours.
  const observer = adapter.observeTurn(text, sentAt, { firstPromptAfterSend: mode !== 'paste' || pasted });
  const deadline = Date.now() + req.timeoutMs;
  let transcriptPath = handle.transcript?.path ?? null;
  let offset = handle.transcript?.offset ?? 0;
  let signalOffset = handle.signals?.offset ?? 0;
  let recorded = false;
  let resubmits = 0;
  let resubmitCheckedAt = sentAt.getTime();
  // Only an answer cal gave is given again: never under a policy that trusts no folder.
  const answerDialogs = mode !== 'paste' && req.config.trustWorkingDir !== false ? preAnsweredDialogs(adapter, tmux, location.paneId) : null;
  let lastPaneCheck = paneCheckedAt;
  let lastTmuxCheck = paneCheckedAt;
  // Trusted only once tmux has shown this process in the handle's pane: just launched, just
  // pasted into (the paste checked it), or after a check here; never a pid recorded long ago.
  const panePid = location.panePid;
  let paneProcessStart = panePid !== undefined && (paneCheckedAt > 0 || mode !== 'paste') ? processStartTime(panePid) : null;
  const paneProcessRuns = () => panePid !== undefined && paneProcessStart !== null && processRuns(panePid, paneProcessStart);
  let cancelledAt: number | null = null;
  let quietAtCancel = false;
  let fedRecords = 0;
  let transcriptMissingSince: number | null = null;
  // When the CLI last wrote a record (or cal last pressed the adapter's stall keys).
  let lastRecordAt = Date.now();

  // The turn's record says `running` once the CLI has recorded the message: written after the
  // read that found it, and only when that read did not find the turn's end as well. A turn that
  // arrives whole in one read goes from `sending` (with its sentAt) straight to its end, one
  // fsync'd write fewer between the CLI's end record and cal's exit; a cal killed in between
  // leaves it `sending`, which recover settles from the transcript as it settles `running`.
  let runningDue = false;
  const onRecord = async () => {
    fedRecords++;
    lastRecordAt = Date.now();
    if (!recorded && observer.observation.phase !== 'waiting') {
      recorded = true;
      runningDue = true;
      await hooks.emit('running', { turnKey: observerKey(observer) });
    }
    // Progress after every record, so --stream shows a turn in the order the CLI wrote it,
    // even when the whole turn arrives in one read.
    if (recorded) hooks.onProgress?.(observer);
  };
  const readAll = async (): Promise<boolean> => {
    if (handle.signals) signalOffset = await feedSignals(handle.signals.path, signalOffset, observer);
    if (!transcriptPath) return false;
    await adapter.refreshTranscript?.(transcriptPath, handle.cli);
    const fed = await feedTranscript(transcriptPath, offset, observer, onRecord);
    if (fed.truncated) {
      throw new CalError('resume_unavailable', `the ${adapter.name} transcript ${transcriptPath} is shorter than what cal already read: it was replaced or truncated`);
    }
    if (!fed.missing) transcriptMissingSince = null;
    else if (transcriptMissingSince === null) transcriptMissingSince = Date.now();
    else if (Date.now() - transcriptMissingSince >= TRANSCRIPT_GONE_MS && !(await paneDiesWithin(REFUSAL_EXIT_MS))) {
      // A CLI whose pane ends now refused in its own words (a resume of a session whose transcript
      // is gone): the pane's end below says so with them. One that lives on cannot record the turn.
      throw new CalError('resume_unavailable', `the ${adapter.name} transcript ${transcriptPath} is gone (deleted or moved while the session ran): ${adapter.name} cannot record this turn, and the session cannot be resumed from it`);
    }
    offset = fed.offset;
    const ended = observer.observation.phase === 'ended';
    if (runningDue) {
      runningDue = false;
      if (!ended) await hooks.onRecorded(observerKey(observer));
    }
    return ended;
  };
  /** Whether the pane's CLI is gone (pane dead, replaced or closed) now or within `ms`. */
  const paneDiesWithin = async (ms: number): Promise<boolean> => {
    const until = Date.now() + ms;
    for (;;) {
      const state = await tmux.paneState(location.paneId);
      if (!samePane(location, state) || state.dead) return true;
      if (Date.now() >= until) return false;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const settle = async (status: ProviderHandle['status']) => {
    handle = {
      ...handle,
      status,
      transcript: transcriptPath ? { path: transcriptPath, offset } : handle.transcript,
      signals: handle.signals ? { ...handle.signals, offset: signalOffset } : null,
    };
    await hooks.onHandleChanged(handle, {});
  };

  /** A TUI that put the interrupted message back in its input gets it emptied (adapter's keys). */
  const clearInterruptedInput = async () => {
    if (adapter.afterInterruptKeys?.length) await tmux.sendKeys(location.paneId, adapter.afterInterruptKeys);
  };

  /** A transcript that holds records, none of a shape the adapter knows, is not an empty turn. */
  const refuseSchemaDrift = () => {
    if (recorded || fedRecords === 0 || observer.unknownRecords < fedRecords) return;
    throw new CalError(
      'cli_unsupported',
      `${adapter.name} ${handle.cli?.version ?? ''} wrote ${fedRecords} transcript records of no shape cal knows to ${transcriptPath}: its transcript format changed (schema drift)`,
    );
  };

  for (;;) {
    if (!transcriptPath) {
      const bound = await adapter.bindTranscript({ cli: handle.cli, env: req.env, config: req.config, sessionId: handle.pendingSessionId, message: text, sentAt });
      if (bound) {
        transcriptPath = bound.path;
        offset = 0;
        handle = { ...handle, nativeSessionId: bound.sessionId, pendingSessionId: null, transcript: { path: bound.path, offset: 0 } };
        await hooks.onHandleChanged(handle, {});
      }
    }
    if (await readAll()) {
      timingMark('end-read');
      const obs = observer.observation;
      if (obs.phase !== 'ended') throw new CalError('internal', 'observer ended without an outcome');
      if (obs.status === 'interrupted' && cancelledAt === null && (await paneDiesWithin(INTERRUPT_DEATH_MS))) {
        // A CLI killed mid-turn may record its end as an interrupt on the way out (Pi 1.x writes
        // an `aborted` reply on SIGHUP); cal did not interrupt it and its process is gone: the
        // turn was lost, not interrupted by a person at the pane (whose CLI keeps running).
        await settle('lost');
        return { handle, outcome: { status: 'lost', answer: null, error: `the ${adapter.name} process ended before the turn recorded its end (it recorded an interrupt while dying)`, turnKey: obs.turnKey, tools: observer.tools } };
      }
      if (obs.status === 'interrupted') await clearInterruptedInput();
      if (obs.status === 'failed' && adapter.afterFailKeys?.length) {
        await pressOneByOne(tmux, location.paneId, adapter.afterFailKeys);
        // The TUI puts the stopped prompt back in its input first, then it is emptied.
        await new Promise((resolve) => setTimeout(resolve, AFTER_FAIL_PAUSE_MS));
        await clearInterruptedInput();
      }
      await settle('idle');
      return { handle, outcome: { status: obs.status, answer: obs.answer, error: obs.error, turnKey: obs.turnKey, tools: observer.tools } };
    }

    const now = Date.now();
    if (now - lastPaneCheck >= PANE_CHECK_MS) {
      lastPaneCheck = now;
      const state = !paneProcessRuns() || now - lastTmuxCheck >= PANE_RECHECK_MS ? await tmux.paneState(location.paneId) : null;
      if (state) lastTmuxCheck = now;
      if (state && samePane(location, state) && !state.dead && panePid !== undefined && paneProcessStart === null) paneProcessStart = processStartTime(panePid);
      if (state && (!samePane(location, state) || state.dead)) {
        // One last read: the CLI may have written its end record while exiting.
        if (await readAll()) continue;
        const screen = samePane(location, state) ? lastWords(await tmux.capture(location.paneId)) : '';
        await settle('lost');
        refuseSchemaDrift();
        if (!recorded) {
          if (mode === 'resume') {
            await hooks.emit('resume_unavailable', { screen });
            throw new CalError('resume_unavailable', `${adapter.name} refused to resume session ${handle.nativeSessionId}${screen ? `: ${screen}` : ''}`);
          }
          throw new CalError('lost', `${adapter.name} exited before it recorded the message${screen ? `: ${screen}` : ''}`);
        }
        return {
          handle,
          outcome: { status: 'lost', answer: null, error: `the ${adapter.name} process ended before the turn recorded its end`, turnKey: observerKey(observer), tools: observer.tools },
        };
      }
      if (!recorded && cancelledAt === null) await answerDialogs?.(now - sentAt.getTime());
      const takeBound = promptBound(adapter, mode, pasted, handle.cli?.version);
      const waited = now - sentAt.getTime();
      const wroteSinceSend = (observer.recordsSinceSend ?? 0) > 0;
      // A launch carries the message, and the TUI submits it itself once started: with its box
      // drawn and empty it is at its prompt with the message in hand, late on a loaded machine
      // (16 Claude Code starts at once in CI), not behind a dialog; it gets three times as long.
      const atPromptLate = async () => !pasted && !wroteSinceSend && waited <= (takeBound ?? 0) * 3 && (await showsEmptyBox(req, location));
      if (takeBound !== null && !recorded && cancelledAt === null && waited > takeBound && !(await atPromptLate())) {
        const screen = lastWords(await tmux.capture(location.paneId));
        await settle('idle');
        if (wroteSinceSend) {
          // The CLI wrote after the send, but no prompt record cal can take for this message:
          // it may well have the message, so "not taken" (resend) would be a guess.
          throw new CalError(
            'unconfirmed',
            `${adapter.name} wrote ${observer.recordsSinceSend} transcript records after the message was sent, none of them a prompt cal can match to it: the message may have been taken; do not send it again before looking at the pane (cal inspect)${screen ? `: ${screen}` : ''}`,
          );
        }
        if (!pasted && (await showsEmptyBox(req, location))) {
          throw new CalError(
            'unconfirmed',
            `${adapter.name} sits at its prompt but did not record the message within ${Math.round(waited / 1000)}s of its launch: it may still take it; do not send it again before looking at the pane (cal inspect)${screen ? `: ${screen}` : ''}`,
          );
        }
        throw new CalError(
          'turn_failed',
          `${adapter.name} did not take the message within ${Math.round(takeBound / 1000)}s: it is not at its prompt (a dialog is open?)${screen ? `: ${screen}` : ''}; answer it in the pane (cal inspect, then a), then continue`,
        );
      }
      if (pasted && !recorded && cancelledAt === null && resubmits < 2 && now - resubmitCheckedAt > RESUBMIT_AFTER_MS) {
        // The TUI can swallow an Enter that arrives while it is busy redrawing; the transcript
        // says the message was not taken, and a box not empty that it may wait there: Enter again.
        resubmitCheckedAt = now;
        const dropped = await enterDropped(req, location);
        // A TUI that may act on an Enter late is looked at until it sits idle; others twice.
        if (dropped || adapter.pasteSubmitDelayMs !== 'when-shown') resubmits++;
        if (dropped) await tmux.sendKeys(location.paneId, ['Enter']);
      }
    }
    const stall = adapter.stallKeys;
    if (stall && recorded && cancelledAt === null && observer.awaitingModel === true && Date.now() - lastRecordAt >= stall.afterMs) {
      // The CLI holds a request with nothing recorded for too long (a dialog over a failing
      // model, for Gemini): the adapter's keys make it record the outcome, or do nothing.
      lastRecordAt = Date.now();
      await tmux.sendKeys(location.paneId, stall.keys);
    }
    if (req.signal?.aborted && cancelledAt === null) {
      // Cancelled as Ctrl-C would: interrupt the CLI the way a person at the pane does, and let
      // it record the interrupt, so the turn is settled from the transcript.
      cancelledAt = Date.now();
      quietAtCancel = observer.partialAnswer === '' && observer.tools.length === 0;
      await pressOneByOne(tmux, location.paneId, adapter.interruptKeys ?? ['Escape']);
    }
    const grace = quietAtCancel && cancelledAt !== null && lastRecordAt < cancelledAt ? QUIET_CANCEL_GRACE_MS : CANCEL_GRACE_MS;
    if (cancelledAt !== null && Date.now() - cancelledAt > grace) {
      await clearInterruptedInput();
      await settle('idle');
      return {
        handle,
        outcome: { status: 'interrupted', answer: null, error: 'cancelled by the caller', turnKey: observerKey(observer), tools: observer.tools },
      };
    }
    if (Date.now() > deadline) {
      refuseSchemaDrift();
      // The stored offset stays where this turn began, so the turn can be settled later.
      throw new CalError('timeout', `no end of turn from ${adapter.name} within ${Math.round(req.timeoutMs / 1000)}s; the turn may still finish (cal recover settles it)`);
    }
    await waitForChange(transcriptPath ?? '/nonexistent-transcript', POLL_MS, 100);
  }
}

/**
 * How long a sent message may stay unrecorded before the CLI is taken to be off its prompt: the
 * adapter's bound after a paste, three times it after a launch (the TUI starts first); none when
 * nothing was sent now (a turn followed again) or the CLI records this prompt only with a reply.
 */
function promptBound({ promptRecordedWithinMs: withinMs, recordsFreshPromptLate }: CliAdapter, mode: Mode, pasted: boolean, version?: string): number | null {
  if (!withinMs) return null;
  if (mode === 'paste') return pasted ? withinMs : null;
  if (mode === 'fresh' && recordsFreshPromptLate?.(version ?? '0')) return null;
  return withinMs * 3;
}

function observerKey(observer: TurnObserver): string | null {
  const obs = observer.observation;
  return obs.phase === 'waiting' ? null : obs.turnKey;
}
