import type { CliAdapter, SessionConfig, TurnObserver } from '../adapters/types.js';
import type { ProviderHandle } from '../handles/schema.js';
import { lastLineBoundary } from '../transcripts/jsonl-tail.js';
import { processRuns } from '../util/process-identity.js';
import { prepareMessage } from './message.js';
import { paneAlive, type TmuxFactory } from './tmux-control.js';
import { feedSignals, feedTranscript } from './transcript-feed.js';

/** What the CLI's transcript says about a turn, read without sending anything (for recover). */
export interface RecordedTurn {
  observation: TurnObserver['observation'];
  tools: TurnObserver['tools'];
  /** The CLI is still there: its pane is alive, or (structured) its process still runs. */
  cliAlive: boolean;
  /** The handle as read: bound to its transcript now (a first turn whose id was not yet on it), offset past an ended turn. */
  handle: ProviderHandle;
}

export async function observeRecordedTurn(
  adapter: CliAdapter,
  handle: ProviderHandle,
  config: SessionConfig,
  message: string,
  sentAt: Date,
  env: Record<string, string>,
  tmux: TmuxFactory,
): Promise<RecordedTurn> {
  const { text } = prepareMessageLeniently(adapter, handle, message);
  const proc = handle.cliProcess ?? null;
  const alive = handle.tmux ? await paneAlive(tmux(handle.tmux.socket), handle.tmux) : proc !== null && processRuns(proc.pid, proc.startTime);
  // Past the stored offset lie only records of turns not yet settled (the offset moves past every
  // settled or lost one), so the clock is not needed to keep earlier turns out, and a clock stepped
  // back since the turn was recorded would hide the CLI's own record of it. Only a transcript not
  // yet bound is searched with a time bound (to tell it from older files).
  const observer = adapter.observeTurn(text, handle.transcript ? undefined : sentAt);
  if (!handle.transcript) {
    const bound = await adapter.bindTranscript({ cli: handle.cli, env, config, sessionId: handle.pendingSessionId, message: text, sentAt });
    if (bound) handle = { ...handle, nativeSessionId: bound.sessionId, pendingSessionId: null, transcript: { path: bound.path, offset: 0 } };
  }
  if (handle.signals) await feedSignals(handle.signals.path, handle.signals.offset, observer);
  if (handle.transcript) {
    await adapter.refreshTranscript?.(handle.transcript.path, handle.cli);
    const fed = await feedTranscript(handle.transcript.path, handle.transcript.offset, observer);
    if (fed.ended) handle = { ...handle, transcript: { ...handle.transcript, offset: fed.offset } };
  }
  return { observation: observer.observation, tools: observer.tools, cliAlive: alive, handle };
}

/**
 * The text a turn's message was sent as. A recorded turn was already accepted once, so a refusal
 * rule added since does not hide it: recover still finds it by the text that was sent.
 */
function prepareMessageLeniently(adapter: CliAdapter, handle: ProviderHandle, message: string): { text: string } {
  try {
    return prepareMessage(adapter, handle.transport, message);
  } catch {
    return { text: message };
  }
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
