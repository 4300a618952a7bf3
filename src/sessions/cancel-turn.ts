import { CalError } from '../errors.js';
import { cancelRequested, clearCancelRequest, requestCancel } from '../state/cancel-request.js';
import { isProcessAlive } from '../state/lock.js';
import { terminalStatuses, type TurnRecord } from '../state/turns.js';
import { handleLockName, type SessionContext } from './context.js';
import { recover } from './recovery.js';
import type { CancelOutcome, RecoverRequest } from './types.js';

/** How often the cal running a turn looks for a cancel request (one stat each time). */
const WATCH_MS = 200;
/**
 * How long `cal cancel` waits for the owner to settle the turn: the owner's own grace for the CLI
 * to record its interrupt (engine/tmux-turn.ts, 10 s) and a little more.
 */
const SETTLE_WAIT_MS = 15_000;

/**
 * The signal a turn runs under while its cal holds the handle: the caller's (Ctrl-C), or a cancel
 * request another process left for this turn. Either cancels the turn the same way (the engine
 * interrupts the CLI as a person would: Escape in a pane, SIGINT to a structured CLI).
 */
export function watchCancelRequests(ctx: SessionContext, handleId: string, turnId: string, signal: AbortSignal | undefined): { signal: AbortSignal; stop(): void } {
  const controller = new AbortController();
  const dir = ctx.store.turnsDir(handleId);
  const onAbort = () => controller.abort();
  if (signal?.aborted) controller.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  const timer = setInterval(() => {
    if (!controller.signal.aborted && cancelRequested(dir, turnId)) controller.abort();
  }, WATCH_MS);
  // The watch never keeps cal alive by itself.
  timer.unref();
  return {
    signal: controller.signal,
    stop() {
      clearInterval(timer);
      signal?.removeEventListener('abort', onAbort);
      clearCancelRequest(dir, turnId);
    },
  };
}

const inFlight = (t: TurnRecord) => !terminalStatuses.has(t.status) && t.status !== 'waiting_for_lock';

/**
 * `cal cancel`: the turn in flight on a handle, found through cal's own records (the handle's
 * lock names its holder; the holder's turn record names it as owner), is cancelled by its owner
 * (a request it picks up within WATCH_MS), and this waits until the owner settled it. A turn whose
 * cal is gone is settled as `cal recover` would; a handle with nothing in flight is left alone.
 */
export async function cancelTurn(ctx: SessionContext, ref: string, req: Omit<RecoverRequest, 'handle' | 'dryRun' | 'retryLost'>): Promise<CancelOutcome> {
  const handle = await ctx.store.loadHandle(ref);
  const holder = await ctx.store.locks.holder(handleLockName(handle.id));
  const turns = await ctx.store.listTurns(handle.id);
  if (holder) {
    const owned = turns.filter((t) => inFlight(t) && t.ownerPid === holder.pid).at(-1);
    if (!owned) return { handle, action: 'idle', turn: null, recovered: [] };
    const dir = ctx.store.turnsDir(handle.id);
    await requestCancel(dir, owned.id, { pid: process.pid });
    await ctx.event(handle.id, 'cancel_requested', owned.id, { by: process.pid }, req.onEvent);
    const deadline = Date.now() + SETTLE_WAIT_MS;
    for (;;) {
      const now = (await ctx.store.listTurns(handle.id)).find((t) => t.id === owned.id) ?? null;
      // Settled, or its owner gone (a second Ctrl-C, kill -9): what is left is recover's.
      if (!now || terminalStatuses.has(now.status) || !isProcessAlive(holder.pid, holder.startTime)) {
        clearCancelRequest(dir, owned.id);
        if (now && !terminalStatuses.has(now.status)) return settleAbandoned(ctx, handle, req);
        return { handle, action: now?.status === 'interrupted' ? 'cancelled' : 'already_ended', turn: now, recovered: [] };
      }
      if (Date.now() > deadline) {
        clearCancelRequest(dir, owned.id);
        throw new CalError('timeout', `the cal running turn ${owned.id} (pid ${holder.pid}) did not settle it within ${SETTLE_WAIT_MS / 1000}s of the cancel request; it may be an older cal that does not read them (Ctrl-C it, or cal recover once it is gone)`, { handle: handle.id, turn: owned.id });
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  if (!turns.some(inFlight)) return { handle, action: 'idle', turn: null, recovered: [] };
  return settleAbandoned(ctx, handle, req);
}

/** A turn whose cal died mid-turn: settled as `cal recover` settles it (this handle only). */
async function settleAbandoned(ctx: SessionContext, handle: CancelOutcome['handle'], req: Omit<RecoverRequest, 'handle' | 'dryRun' | 'retryLost'>): Promise<CancelOutcome> {
  const recovered = await recover(ctx, { ...req, handle: handle.id });
  const last = recovered.at(-1);
  const turn = last ? ((await ctx.store.listTurns(handle.id)).find((t) => t.id === last.turn) ?? null) : null;
  return { handle, action: 'recovered', turn, recovered };
}
