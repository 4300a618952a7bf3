import { CalError, toCalError } from '../errors.js';
import type { LocalSessions } from '../library/sessions.js';
import { completedOrThrow, TurnError } from '../library/errors.js';
import type { CalEvent, TurnCallOptions, TurnProgress, TurnResult } from '../library/types.js';
import type { JobProgress, JobResult, Operation, WireError } from './protocol.js';

/**
 * The worker's one job function: run this operation of cal's library on this host. It is all a
 * job can make a worker do (docs/fleet.md), and nothing else knows it runs in BullMQ, so another
 * engine (Temporal's activities) could call it the same way.
 *
 * `jobId` is the idempotency key: the turn an operation creates is tagged `fleet:<jobId>`, and a
 * job run again (its worker died mid-turn) returns that turn as settled, never sending it twice.
 */
export async function runOperation(sessions: LocalSessions, host: string, op: Operation, jobId: string, report: (p: JobProgress) => void, signal: AbortSignal): Promise<JobResult> {
  try {
    return { ok: true, host, value: await valueOf(sessions, op, jobId, report, signal) };
  } catch (err) {
    const e = toCalError(err);
    const result = err instanceof TurnError ? err.result : undefined;
    return { ok: false, host, error: e.toJSON() as WireError, ...(result ? { result } : {}) };
  }
}

export const turnTag = (jobId: string): string => `fleet:${jobId}`;

async function valueOf(sessions: LocalSessions, op: Operation, jobId: string, report: (p: JobProgress) => void, signal: AbortSignal): Promise<unknown> {
  // The caller's Ctrl-C (its AbortSignal) reaches the turn here: it settles as interrupted, as on one machine.
  const live: Pick<TurnCallOptions, 'onEvent' | 'onProgress' | 'onSent' | 'signal'> = {
    onEvent: (event: CalEvent) => report({ event: { ...event } }),
    onProgress: (progress: TurnProgress) => report({ progress: { ...progress } }),
    onSent: (sent) => report({ sent: { handle: sent.handle, turn: sent.turn } }),
    signal,
  };
  switch (op.op) {
    case 'start': {
      const earlier = await settledEarlier(sessions, jobId);
      if (earlier) return completedOrThrow(earlier);
      return releasedOnFailure(sessions, jobId, sessions.startTagged({ ...op.options, ...live }, turnTag(jobId)));
    }
    case 'continue': {
      const earlier = await settledEarlier(sessions, jobId);
      if (earlier) return completedOrThrow(earlier);
      return releasedOnFailure(sessions, jobId, sessions.continueTagged(op.ref, op.message, { ...op.options, ...live }, turnTag(jobId)));
    }
    case 'killTmux':
      return sessions.killTmux(op.ref);
    case 'cancel':
      // Runs beside the turn it cancels (the host queue takes many jobs at once): the turn's own
      // job settles it as interrupted, as a cancel from another process on that machine does.
      return sessions.cancel(op.ref, op.timeoutSeconds === undefined ? {} : { timeoutSeconds: op.timeoutSeconds });
    case 'remove':
      return sessions.remove(op.ref, { force: op.force });
    case 'inspect':
      return sessions.inspect();
    case 'inspectOne':
      return sessions.inspect(op.ref, { screen: op.screen });
    case 'events': {
      // A follow sends each event as it comes (job progress) and ends when its caller aborts it
      // or stops renewing its lease, or the handle is removed.
      if (op.follow) {
        for await (const e of sessions.events(op.ref, { follow: true, signal })) report({ event: { ...e } });
        return [];
      }
      const out: CalEvent[] = [];
      for await (const e of sessions.events(op.ref)) out.push(e);
      return out;
    }
    case 'recover':
      return sessions.recover({ dryRun: op.dryRun, retryLost: op.retryLost, timeoutSeconds: op.timeoutSeconds });
  }
}

/**
 * A turn call that ended without settling its turn (a timeout: the CLI may still finish it) leaves
 * the turn to `cal recover`, as a cal that exits does: the worker, which lives on, is not its
 * owner any more, so a recover (through the fleet, or the worker's own at its next start) settles
 * it from the CLI's records. The error's "cal recover settles it" holds through a fleet too.
 */
async function releasedOnFailure(sessions: LocalSessions, jobId: string, call: Promise<TurnResult>): Promise<TurnResult> {
  try {
    return await call;
  } catch (err) {
    await sessions.releaseTagged(turnTag(jobId)).catch(() => undefined);
    throw err;
  }
}

/**
 * The turn an earlier run of this job created, settled: a job BullMQ hands out again after its
 * worker died finds the turn its first run recorded, and it is settled as `cal recover` does
 * (from the CLI's transcript, waiting for a CLI still at work), never delivered anew.
 */
async function settledEarlier(sessions: LocalSessions, jobId: string): Promise<TurnResult | null> {
  const tag = turnTag(jobId);
  const found = await sessions.findTagged(tag);
  if (!found) return null;
  if (isSettled(found)) return found;
  await sessions.recover();
  const after = await sessions.findTagged(tag);
  if (after && isSettled(after)) return after;
  throw new CalError('busy', `the turn of this request (${found.turn.id}) is still ${after?.turn.status ?? found.turn.status} after recover; run cal recover on host to settle it`, {
    handle: found.handle.id,
    turn: found.turn.id,
  });
}

function isSettled({ turn }: TurnResult): boolean {
  return ['completed', 'failed', 'interrupted', 'lost'].includes(turn.status);
}
