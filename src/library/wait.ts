import { CalError } from '../errors.js';
import { isProcessAlive } from '../util/process-identity.js';
import { completedOrThrow } from './errors.js';
import type { HandleRef, InspectOptions, SessionDetail, Turn, TurnResult, WaitOptions } from './types.js';

const SETTLED = new Set(['completed', 'failed', 'interrupted', 'lost']);
const POLL_MS = 200;

/** What waiting needs of a Sessions object: one handle's records (on this machine or through a fleet). */
type Inspect = (ref: HandleRef, options?: InspectOptions) => Promise<SessionDetail>;

/** One handle waited on: the turn (its id once known) and whether its owner looked gone last time. */
interface Watched {
  ref: HandleRef;
  turnId: string | undefined;
  ownerGone: boolean;
  /** What the last look found, for the timeout's message. */
  seen: { handle: string; status: string } | null;
}

/**
 * Waits for the first of several turns (each handle's newest, or the one named) to settle, polling
 * the records (never a terminal): the settled one as a completed `TurnResult`, or thrown as the
 * `TurnError` its ending is. A turn whose owning cal died before settling it is `lost` (cal recover
 * settles it); `timeoutSeconds` gives up with `timeout` and leaves every turn running.
 */
export async function waitForTurns(inspect: Inspect, refs: readonly HandleRef[], options: WaitOptions & { turn?: string } = {}): Promise<TurnResult> {
  if (refs.length === 0) throw new CalError('usage', 'wait for which handle? name at least one');
  if (options.turn !== undefined && refs.length > 1) throw new CalError('usage', 'a turn id names the turn of one handle: wait for one handle with it');
  const timeoutMs = options.timeoutSeconds === undefined ? Infinity : options.timeoutSeconds * 1000;
  if (!(timeoutMs > 0)) throw new CalError('usage', `timeoutSeconds takes a positive number, not ${JSON.stringify(options.timeoutSeconds)}`);
  const deadline = Date.now() + timeoutMs;
  const watched: Watched[] = refs.map((ref) => ({ ref, turnId: options.turn, ownerGone: false, seen: null }));
  for (;;) {
    if (options.signal?.aborted) throw new CalError('interrupted', 'the wait was aborted; the turns go on');
    for (const w of watched) {
      const detail = await inspect(w.ref, { screen: false });
      const turn: Turn | undefined = w.turnId === undefined ? detail.turns.at(-1) : detail.turns.find((t) => t.id === w.turnId);
      if (!turn) throw new CalError('not_found', w.turnId === undefined ? `handle ${detail.handle.id} has no turn yet` : `handle ${detail.handle.id} has no turn ${w.turnId}`, { handle: detail.handle.id });
      // The newest turn when the wait began is the one waited for, not one started later.
      w.turnId = turn.id;
      if (SETTLED.has(turn.status)) return completedOrThrow({ handle: detail.handle, turn });
      // Through a fleet the turn's owner is its host's worker, whose process is not this
      // machine's to look at: the host settles the turn (a host down is host_unavailable).
      // The owner is judged dead only on a second look: it may have settled the turn and exited
      // between this read of the record and the look at its process.
      const gone = (detail.handle as { host?: string }).host === undefined && turn.ownerPid !== null && !isProcessAlive(turn.ownerPid, turn.ownerStartTime);
      if (gone && w.ownerGone) {
        throw new CalError('lost', `the cal that ran turn ${turn.id} ended before the turn settled (${turn.status}): cal recover settles it from the CLI's records, then cal wait prints it`, { handle: detail.handle.id, turn: turn.id });
      }
      w.ownerGone = gone;
      w.seen = { handle: detail.handle.id, status: turn.status };
    }
    if (watched.some((w) => w.ownerGone)) continue;
    if (Date.now() >= deadline) {
      const still = watched.map((w) => `turn ${w.turnId} ${watched.length > 1 ? `of ${w.seen?.handle} ` : ''}is still ${w.seen?.status}`).join('; ');
      const only = watched.length === 1 ? { handle: watched[0]!.seen?.handle, turn: watched[0]!.turnId } : {};
      throw new CalError('timeout', `${still} after ${options.timeoutSeconds}s; ${watched.length === 1 ? 'it goes' : 'they go'} on (cal wait again, or cal inspect)`, only);
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
