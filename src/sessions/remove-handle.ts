import { killPaneNamed, killTransport } from '../engine/transport.js';
import { CalError } from '../errors.js';
import type { AgentSessionHandle } from '../handles/schema.js';
import type { HeldLock } from '../state/lock.js';
import { terminalStatuses } from '../state/turns.js';
import { handleLockName, type SessionContext } from './context.js';
import { nextPaneName } from './execute-turn.js';
import { releaseWorktree, type WorktreeRelease } from '../git/worktree.js';

/** Which command removes a handle: `cal remove`, or `cal start --replace` taking its name. */
export type RemovedBy = 'remove' | 'replace';

export interface RemoveResult {
  handle: AgentSessionHandle;
  /** How many tmux sessions of the handle were still running and were ended. */
  panesEnded: number;
  /** The session's git worktree (`start --worktree`): deleted with its branch, or kept with why. */
  worktree?: WorktreeRelease;
}

/**
 * Removes a handle: ends its panes, then deletes its records (state/store.ts deleteHandle).
 * A turn in flight (another cal holds the handle, or a turn never settled: the CLI may still be
 * working on it) refuses with busy unless `force`, because removing it would leave that CLI
 * running with nobody to read its answer. The CLI's own transcript is never touched.
 */
export async function removeHandle(ctx: SessionContext, ref: string, force: boolean, by: RemovedBy = 'remove'): Promise<RemoveResult> {
  const handle = await ctx.store.loadHandle(ref);
  // `cal start --replace` has no --force: it names the command that has one.
  const forceHint = by === 'remove' ? 'pass --force' : `remove it first with cal remove --force ${handle.name ?? handle.id}`;
  let lock: HeldLock | null = null;
  try {
    lock = await ctx.store.locks.acquire(handleLockName(handle.id));
  } catch (err) {
    if (!(err instanceof CalError && err.kind === 'busy') || !force) {
      throw new CalError('busy', `handle ${handle.id} is busy: another cal process is running a turn on it; wait for it, or ${forceHint} to remove it anyway`, { handle: handle.id });
    }
  }
  try {
    const unsettled = (await ctx.store.listTurns(handle.id)).filter((t) => !terminalStatuses.has(t.status));
    if (unsettled.length > 0 && !force) {
      const turn = unsettled[0]!;
      throw new CalError('busy', `handle ${handle.id} has a turn that never settled (${turn.id}, ${turn.status}): the CLI may still be working on it; settle it with cal recover, or ${forceHint}`, {
        handle: handle.id,
        turn: turn.id,
      });
    }
    // Marked removed before its panes end: a cal still running a turn of it (--force) sees its
    // pane die and must find the handle gone, not record a lost turn and suggest continuing it.
    if (force) await ctx.store.markRemoved(handle.id);
    const panesEnded = await endPanes(ctx, handle);
    // The records go while the lock is held, so no continue can slip in between.
    await ctx.store.deleteHandle(handle);
    // After its panes ended: no CLI works in the worktree any more.
    const worktree = handle.worktree ? await releaseWorktree(handle.worktree) : undefined;
    return { handle, panesEnded, ...(worktree ? { worktree } : {}) };
  } finally {
    await lock?.release();
  }
}

/** Ends the current pane, every recorded one still running, and a pane a dead cal never recorded. */
async function endPanes(ctx: SessionContext, handle: AgentSessionHandle): Promise<number> {
  let ended = 0;
  if (handle.provider.transport !== 'tmux') return ended;
  if (await killTransport(handle.provider, ctx.tmux)) ended++;
  const names = new Set([...handle.panes.map((p) => p.tmux.session), nextPaneName(handle)]);
  names.delete(handle.provider.tmux?.session ?? '');
  for (const name of names) if (await killPaneNamed(ctx.store.layout.tmux, name, ctx.tmux)) ended++;
  return ended;
}
