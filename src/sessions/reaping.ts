import { findOwnPane, inputBoxText, listPanes } from '../engine/transport.js';
import { CalError } from '../errors.js';
import type { AgentSessionHandle, TmuxLocation } from '../handles/schema.js';
import type { HeldLock } from '../state/lock.js';
import type { ReapPolicy } from '../state/config.js';
import type { EventRecord } from '../state/store.js';
import { terminalStatuses } from '../state/turns.js';
import { handleLockName, type SessionContext } from './context.js';
import { retirePane } from './retire-pane.js';
import { markReaped, reapedRecently } from '../state/reap-mark.js';
import { readReapPolicy } from '../state/config.js';

/**
 * Reaping idle panes (issue 42, docs/reaping.md). A live pane is a cache of a session whose CLI
 * resumes natively, so ending it loses nothing: the next continue finds no pane and resumes the
 * session in a new one. A pane is never ended while a turn may be in flight on it (the handle's
 * lock is held, or its newest turn never settled), while a terminal is attached to it, or while a
 * person's draft is in its input box: keystrokes reach a pane only through an attached client, so
 * the box of a pane attached to since its last turn ended is read, and a draft there keeps it.
 */
export interface ReapRequest {
  idleSeconds: number | null;
  maxLive: number | null;
  dryRun?: boolean;
  onEvent?: (e: EventRecord) => void;
}

export interface ReapItem {
  handle: string;
  name: string | null;
  pane: string;
  /** When the session was last used: its newest turn's last change, else when its pane started. */
  lastUsedAt: string;
  idleSeconds: number;
  action: 'reaped' | 'would_reap' | 'kept';
  reason: string;
}

interface Candidate {
  handle: AgentSessionHandle;
  pane: string;
  dead: boolean;
  lastUsedMs: number;
  /** Why it may not be reaped, or null. */
  protectedBy: string | null;
}

/** Ends the panes the policy says to end, least recently used first; says what it did with each. */
export async function reapPanes(ctx: SessionContext, req: ReapRequest): Promise<ReapItem[]> {
  // One reaper at a time: two would each count the same panes and end more than the policy asks.
  let reaper: HeldLock | null = null;
  if (!req.dryRun) {
    try {
      reaper = await ctx.store.locks.acquire('reaper');
    } catch (err) {
      if (err instanceof CalError && err.kind === 'busy') return [];
      throw err;
    }
  }
  try {
    const listed = await listPanes(ctx.store.layout.tmux, ctx.tmux);
    if (listed.length === 0) return [];
    const now = Date.now();
    const candidates: Candidate[] = [];
    for (const handle of await ctx.store.listHandles()) {
      const location = handle.provider.transport === 'tmux' ? handle.provider.tmux : null;
      const own = location ? findOwnPane(location, listed) : null;
      if (!location || !own) continue;
      const last = await ctx.store.lastTurn(handle.id);
      const started = handle.panes.find((p) => p.tmux.paneId === location.paneId && p.endedAt === null)?.startedAt ?? handle.updatedAt;
      const lastUsedMs = Math.max(Date.parse(started), last ? Date.parse(last.updatedAt) : 0);
      let protectedBy: string | null = null;
      if ((last && !terminalStatuses.has(last.status)) || (await ctx.store.locks.holder(handleLockName(handle.id)))) protectedBy = 'a turn is in flight';
      else if (own.clients > 0) protectedBy = 'a terminal is attached';
      else if (own.lastAttached !== null && own.lastAttached >= Math.floor(lastUsedMs / 1000) && !own.dead) protectedBy = await draftKept(ctx, handle, location);
      else if (handle.provider.nativeSessionId === null) protectedBy = 'its CLI recorded no session to resume';
      candidates.push({ handle, pane: location.paneId, dead: own.dead, lastUsedMs, protectedBy });
    }
    candidates.sort((a, b) => a.lastUsedMs - b.lastUsedMs);
    let live = candidates.filter((c) => !c.dead).length;
    const items: ReapItem[] = [];
    for (const c of candidates) {
      const idle = Math.max(0, Math.floor((now - c.lastUsedMs) / 1000));
      const why = c.dead ? 'its CLI has exited' : req.idleSeconds !== null && idle >= req.idleSeconds ? `idle ${idle}s (policy: ${req.idleSeconds}s)` : req.maxLive !== null && live > req.maxLive ? `least recently used of ${live} live panes (policy: at most ${req.maxLive})` : null;
      const item = { handle: c.handle.id, name: c.handle.name, pane: c.pane, lastUsedAt: new Date(c.lastUsedMs).toISOString(), idleSeconds: idle };
      if (why === null || c.protectedBy !== null) {
        items.push({ ...item, action: 'kept', reason: c.protectedBy ?? 'within the policy' });
        continue;
      }
      const done = req.dryRun ? true : await reapOne(ctx, c.handle.id, c.pane, why, req.onEvent);
      if (done === true) {
        if (!c.dead) live--;
        items.push({ ...item, action: req.dryRun ? 'would_reap' : 'reaped', reason: why });
      } else items.push({ ...item, action: 'kept', reason: done });
    }
    return items;
  } finally {
    await reaper?.release();
  }
}

/**
 * A pane a terminal was attached to since its last turn: a person may have left a draft in its
 * input box. Its box is read as the paste reads it (engine/draft.ts): empty, it is reaped like
 * any other; a draft, or a box that cannot be read (a dialog open), keeps it.
 */
async function draftKept(ctx: SessionContext, handle: AgentSessionHandle, location: TmuxLocation): Promise<string | null> {
  const adapter = await ctx.adapter(handle.provider.provider).catch(() => null);
  const box = await inputBoxText(location, adapter?.draft, ctx.tmux).catch(() => null);
  if (box === '') return null;
  return box === null ? 'a terminal was attached since its last turn and its input box cannot be read (it may hold a draft)' : 'a terminal was attached since its last turn and its input box holds a draft';
}

/**
 * Ends one pane under its handle's lock (no turn can start meanwhile), and records it as ended:
 * the handle keeps no current pane, so the next continue resumes natively in a new one. Returns
 * true, or why it was left alone after all.
 */
async function reapOne(ctx: SessionContext, handleId: string, paneId: string, why: string, onEvent?: (e: EventRecord) => void): Promise<true | string> {
  let lock: HeldLock;
  try {
    // Brief: a continue arriving meanwhile waits the moment this takes, never fails busy.
    lock = await ctx.store.locks.acquire(handleLockName(handleId), { brief: true });
  } catch (err) {
    if (err instanceof CalError && err.kind === 'busy') return 'a turn is in flight';
    throw err;
  }
  try {
    // Read again under the lock: a turn that ended meanwhile may have changed the pane.
    const handle = await ctx.store.loadHandle(handleId);
    const location = handle.provider.tmux;
    if (!location || location.paneId !== paneId) return 'its pane changed meanwhile';
    const last = await ctx.store.lastTurn(handle.id);
    if (last && !terminalStatuses.has(last.status)) return 'a turn is in flight';
    await retirePane(ctx, handle, 'pane_reaped', `reaped: ${why}`, onEvent);
    return true;
  } finally {
    await lock.release();
  }
}

/** The policy's limits, with a caller's overrides (`cal reap --idle S --max-live N`). */
export function reapLimits(policy: ReapPolicy, overrides: { idleSeconds?: number | null; maxLive?: number | null }): Pick<ReapRequest, 'idleSeconds' | 'maxLive'> {
  return {
    idleSeconds: overrides.idleSeconds !== undefined ? overrides.idleSeconds : policy.idleSeconds,
    maxLive: overrides.maxLive !== undefined ? overrides.maxLive : policy.maxLive,
  };
}

/**
 * The policy applied when a turn ends (config `reap.auto`, on by default): best effort, after
 * the handle's lock is released, and never the turn's failure. A turn that launched no pane left
 * the live count as it was, so its policy is the idle bound alone, applied at most once a minute
 * (state/reap-mark.ts).
 */
export async function reapAfterTurn(ctx: SessionContext, launchedPane: boolean): Promise<void> {
  try {
    const policy = await readReapPolicy(ctx.store.layout.root);
    if (!policy.auto) return;
    if (!launchedPane && reapedRecently(ctx.store.layout.root, policy.idleSeconds)) return;
    await reapPanes(ctx, { idleSeconds: policy.idleSeconds, maxLive: policy.maxLive });
    await markReaped(ctx.store.layout.root);
  } catch {
    // A policy that cannot be applied now is applied by the next turn, or by cal reap.
  }
}

