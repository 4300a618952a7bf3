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
export async function runOperation(sessions: LocalSessions, host: string, op: Operation, jobId: string, report: (p: JobProgress) => void): Promise<JobResult> {
  try {
    return { ok: true, host, value: await valueOf(sessions, op, jobId, report) };
  } catch (err) {
    const e = toCalError(err);
    const result = err instanceof TurnError ? err.result : undefined;
    return { ok: false, host, error: e.toJSON() as WireError, ...(result ? { result } : {}) };
  }
}

export const turnTag = (jobId: string): string => `fleet:${jobId}`;

async function valueOf(sessions: LocalSessions, op: Operation, jobId: string, report: (p: JobProgress) => void): Promise<unknown> {
  const live: Pick<TurnCallOptions, 'onEvent' | 'onProgress'> = {
    onEvent: (event: CalEvent) => report({ event: { ...event } }),
    onProgress: (progress: TurnProgress) => report({ progress: { ...progress } }),
  };
  switch (op.op) {
    case 'start': {
      const earlier = await settledEarlier(sessions, jobId);
      if (earlier) return completedOrThrow(earlier);
      return sessions.startTagged({ ...op.options, ...live }, turnTag(jobId));
    }
    case 'continue': {
      const earlier = await settledEarlier(sessions, jobId);
      if (earlier) return completedOrThrow(earlier);
      return sessions.continueTagged(op.ref, op.message, { ...op.options, ...live }, turnTag(jobId));
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
      const out: CalEvent[] = [];
      for await (const e of sessions.events(op.ref)) out.push(e);
      return out;
    }
    case 'recover':
      return sessions.recover({ dryRun: op.dryRun, retryLost: op.retryLost, timeoutSeconds: op.timeoutSeconds });
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
