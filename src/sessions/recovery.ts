import { observeRecordedTurn, skipPastTranscript } from '../engine/recorded-turn.js';
import type { TurnOutcome } from '../engine/types.js';
import { CalError, toCalError } from '../errors.js';
import type { ProviderHandle } from '../handles/schema.js';
import { isProcessAlive, type HeldLock } from '../state/lock.js';
import type { SettledMark } from '../state/settled-mark.js';
import type { StateStore } from '../state/store.js';
import { terminalStatuses, type TurnRecord } from '../state/turns.js';
import { readHistory } from './api-history.js';
import { errorKindFor, handleLockName, sessionConfig, type SessionContext } from './context.js';
import { executeTurn } from './execute-turn.js';
import { adoptTurn, newTurn, type TurnJournal } from './turn-journal.js';
import type { ExecOptions, RecoverAction, RecoverItem, RecoverRequest } from './types.js';

/**
 * Settling turns whose cal process is gone (design §6): from the CLI's transcript first, so a
 * message the CLI already received is never sent twice; a CLI still working is waited for; a
 * message never delivered is delivered; a turn whose pane died without an end record is lost.
 */
type RecoveryPlan =
  | { action: 'settled_from_transcript'; status: TurnOutcome['status']; answer: string | null; error: string | null; turnKey: string | null; tools: TurnOutcome['tools']; handle: ProviderHandle | null }
  | { action: 'waited_for_cli'; handle: ProviderHandle | null }
  | { action: 'marked_lost' }
  | { action: 'delivered' };

/**
 * Two passes: first every turn the transcript (or a dead pane) already settles, so none of them
 * waits behind a CLI that is still working; then the turns that need waiting for or delivering,
 * in order. Turn records that cannot be read are reported, never skipped in silence.
 */
export async function recover(ctx: SessionContext, req: RecoverRequest): Promise<RecoverItem[]> {
  const open: Array<{ handle: string; turn: TurnRecord }> = [];
  const lostLast: Array<{ handle: string; turn: TurnRecord }> = [];
  const items: RecoverItem[] = [];
  for (const handle of await ctx.store.listHandles()) {
    if (req.handle !== undefined && handle.id !== req.handle) continue;
    const turns = await ctx.store.listTurns(handle.id);
    for (const turn of turns) {
      if (terminalStatuses.has(turn.status)) continue;
      if (turn.ownerPid !== null && isProcessAlive(turn.ownerPid, turn.ownerStartTime)) continue;
      open.push({ handle: handle.id, turn });
    }
    // --retry-lost also takes a turn an earlier recover (or continue) already marked lost, when
    // it is still the handle's last: nothing was said after it, so sending it again repeats nothing.
    const last = turns.at(-1);
    if (req.retryLost && last?.status === 'lost') lostLast.push({ handle: handle.id, turn: last });
    for (const bad of await ctx.store.unreadableTurns(handle.id)) {
      items.push({ handle: handle.id, turn: bad.file, message: '', before: 'queued', action: 'skipped_unreadable', status: 'queued', answer: null, error: bad.reason });
    }
  }
  const later: typeof open = [];
  for (const o of open) {
    const item = await recoverTurn(ctx, o.handle, o.turn, req, 'settle_only');
    if (item) items.push(item);
    else later.push(o);
  }
  for (const o of later) items.push((await recoverTurn(ctx, o.handle, o.turn, req, 'all')) as RecoverItem);
  for (const o of lostLast) items.push(await retryLostTurn(ctx, o.handle, o.turn, req));
  return items;
}

/** What recover reports of one turn: where it stood before, what recover did, where it is now. */
function recoverItem(handle: string, before: TurnRecord['status'], action: RecoverAction, turn: TurnRecord, error?: string): RecoverItem {
  return { handle, turn: turn.id, message: turn.message, before, action, status: turn.status, answer: turn.answer, ...(error ? { error } : {}) };
}

/** Sends a lost last turn's message again as a new turn (under the handle's lock). */
async function retryLostTurn(ctx: SessionContext, handleId: string, lost: TurnRecord, req: RecoverRequest): Promise<RecoverItem> {
  const item = (action: RecoverAction, turn: TurnRecord, error?: string) => recoverItem(handleId, lost.status, action, turn, error);
  let lock: HeldLock;
  try {
    lock = await ctx.store.locks.acquire(handleLockName(handleId));
  } catch {
    return item('skipped_busy', lost);
  }
  try {
    if ((await ctx.store.listTurns(handleId)).at(-1)?.id !== lost.id) return item('skipped_settled', lost);
    if (req.dryRun) return { ...item('retried_lost', lost), status: 'sending' };
    await ctx.event(handleId, 'recovering', lost.id, { action: 'retried_lost' }, req.onEvent);
    const fresh = await newTurn(ctx.store, handleId, lost.message, lost.correlationId);
    try {
      await executeTurn(ctx, handleId, fresh, req, { kind: 'deliver' });
    } catch (err) {
      return item('retried_lost', fresh.turn, toCalError(err).message);
    }
    return item('retried_lost', fresh.turn);
  } finally {
    await lock.release();
  }
}

async function recoverTurn(ctx: SessionContext, handleId: string, stale: TurnRecord, req: RecoverRequest, pass: 'settle_only'): Promise<RecoverItem | null>;
async function recoverTurn(ctx: SessionContext, handleId: string, stale: TurnRecord, req: RecoverRequest, pass: 'all'): Promise<RecoverItem>;
async function recoverTurn(ctx: SessionContext, handleId: string, stale: TurnRecord, req: RecoverRequest, pass: 'settle_only' | 'all'): Promise<RecoverItem | null> {
  const item = (action: RecoverAction, turn: TurnRecord, error?: string) => recoverItem(handleId, stale.status, action, turn, error);
  let lock: HeldLock;
  try {
    // Another cal (a live continuation or a second recover) holding the handle owns its turns.
    lock = await ctx.store.locks.acquire(handleLockName(handleId));
  } catch {
    return item('skipped_busy', stale);
  }
  try {
    const current = (await ctx.store.listTurns(handleId)).find((t) => t.id === stale.id) ?? stale;
    if (terminalStatuses.has(current.status) || (current.ownerPid !== null && isProcessAlive(current.ownerPid, current.ownerStartTime))) {
      return item('skipped_settled', current);
    }
    const plan = await recoveryPlan(ctx, handleId, current, req.env);
    // The first pass takes only what needs no waiting and no sending.
    if (pass === 'settle_only' && plan.action !== 'settled_from_transcript' && plan.action !== 'marked_lost') return null;
    if (req.dryRun) return plannedItem(item(plan.action, current), plan, req.retryLost === true);
    const journal = await adoptTurn(ctx.store, current);
    await ctx.event(handleId, 'recovering', current.id, { action: plan.action }, req.onEvent);
    try {
      if (plan.action === 'delivered') {
        await executeTurn(ctx, handleId, journal, req, { kind: 'deliver' });
      } else if (plan.action === 'marked_lost' && req.retryLost) {
        await applyPlan(ctx, handleId, journal, plan, req);
        const fresh = await newTurn(ctx.store, handleId, current.message, current.correlationId);
        await executeTurn(ctx, handleId, fresh, req, { kind: 'deliver' });
        return item('retried_lost', fresh.turn);
      } else {
        await applyPlan(ctx, handleId, journal, plan, req);
      }
    } catch (err) {
      return item(plan.action, journal.turn, toCalError(err).message);
    }
    return item(plan.action, journal.turn);
  } finally {
    await lock.release();
  }
}

/**
 * What --dry-run reports: the outcome the plan leads to where it is known without acting (the
 * transcript's ending, lost, a retry's send), else the status the turn is in while it is waited
 * for or delivered.
 */
function plannedItem(item: RecoverItem, plan: RecoveryPlan, retryLost: boolean): RecoverItem {
  switch (plan.action) {
    case 'settled_from_transcript':
      return { ...item, status: plan.status, answer: plan.answer, ...(plan.error ? { error: plan.error } : {}) };
    case 'marked_lost':
      return retryLost ? { ...item, action: 'retried_lost', status: 'sending' } : { ...item, status: 'lost' };
    case 'waited_for_cli':
      return { ...item, status: 'running' };
    case 'delivered':
      return { ...item, status: 'sending' };
  }
}

/** Carries out a plan that sends nothing: settle from the transcript, wait for the CLI, or mark lost. */
async function applyPlan(ctx: SessionContext, handleId: string, journal: TurnJournal, plan: Exclude<RecoveryPlan, { action: 'delivered' }>, req: ExecOptions): Promise<void> {
  const turn = journal.turn;
  switch (plan.action) {
    case 'settled_from_transcript':
      await journal.set(plan.status, { answer: plan.answer, error: plan.error ? { kind: errorKindFor(plan.status), message: plan.error } : null, turnKey: plan.turnKey, tools: plan.tools });
      // The turn is over: the session is `idle`, as the engine leaves it after a turn it followed
      // to the end (a start killed mid-turn left it `active`, beside a completed turn).
      await saveProvider(ctx, handleId, { ...(plan.handle ?? (await ctx.store.loadHandle(handleId)).provider), status: 'idle' });
      await ctx.event(handleId, plan.status, turn.id, { turnKey: plan.turnKey, recovered: true }, req.onEvent);
      return;
    case 'waited_for_cli':
      if (plan.handle) await saveProvider(ctx, handleId, plan.handle);
      await executeTurn(ctx, handleId, journal, req, { kind: 'await', sentAt: turnSentAt(turn) });
      return;
    case 'marked_lost': {
      const lostHandle = await ctx.store.loadHandle(handleId);
      await ctx.store.saveHandle({ ...lostHandle, provider: { ...(await skipPastTranscript(lostHandle.provider)), status: 'lost' } });
      await journal.set('lost', { error: { kind: 'lost', message: 'the CLI (its pane, or its structured process) ended before the turn recorded its end (found by cal recover)' } });
      await ctx.event(handleId, 'lost', turn.id, { recovered: true }, req.onEvent);
      return;
    }
  }
}

async function saveProvider(ctx: SessionContext, handleId: string, provider: ProviderHandle): Promise<void> {
  await ctx.store.saveHandle({ ...(await ctx.store.loadHandle(handleId)), provider });
}

/**
 * The earliest time the CLI can have recorded the turn's message. A record's clock may lie in
 * the future (a clock stepped back since), so "now" bounds it too; the stored transcript offset,
 * not the clock, keeps earlier turns' records out.
 */
function turnSentAt(turn: TurnRecord): Date {
  return new Date(Math.min(new Date(turn.createdAt).getTime(), Date.now()) - 2000);
}

/** Decides what recover does with one turn, from the transcript and the pane, changing nothing. */
async function recoveryPlan(ctx: SessionContext, handleId: string, turn: TurnRecord, env: Record<string, string>): Promise<RecoveryPlan> {
  const handle = await ctx.store.loadHandle(handleId);
  if (handle.provider.transport === 'api') {
    const history = handle.provider.transcript ? await readHistory(handle.provider.transcript.path) : [];
    const index = turn.turnKey?.startsWith('m') ? Number(turn.turnKey.slice(1)) : null;
    const reply = index !== null ? history[index + 1] : undefined;
    if (index !== null && history[index]?.content === turn.message && reply?.role === 'assistant') {
      return { action: 'settled_from_transcript', status: 'completed', answer: reply.content, error: null, turnKey: turn.turnKey, tools: [], handle: null };
    }
    return { action: 'delivered' };
  }
  const provider = handle.provider;
  const mayHaveBeenSent = turn.status === 'sending' || turn.status === 'running';
  // An ACP agent talks to the cal that started it over pipes and ends with it; a turn that may
  // have reached it is not known to be anywhere, and is never sent twice.
  if (provider.transport === 'acp' && (turn.status === 'running' || turn.sentAt)) return { action: 'marked_lost' };
  // A first turn whose cal died right after the launch has no pane or transcript on the handle
  // yet, but the id chosen up front still finds what the CLI recorded.
  if (mayHaveBeenSent && (provider.transcript || provider.tmux || provider.pendingSessionId)) {
    const seen = await observeRecordedTurn(await ctx.adapter(provider.provider), provider, sessionConfig(handle), turn.message, turnSentAt(turn), env, ctx.tmux);
    const obs = seen.observation;
    const rebound = seen.handle !== provider ? seen.handle : null;
    if (obs.phase === 'ended') {
      return { action: 'settled_from_transcript', status: obs.status, answer: obs.answer, error: obs.error, turnKey: obs.turnKey, tools: seen.tools, handle: seen.handle };
    }
    if (obs.phase === 'running') return seen.cliAlive ? { action: 'waited_for_cli', handle: rebound } : { action: 'marked_lost' };
    // Not in the transcript. A message that left cal may still be on its way into a live pane,
    // or into a structured CLI that has it (such a turn is `running` from its launch on).
    if (seen.cliAlive && (turn.sentAt || turn.status === 'running')) return { action: 'waited_for_cli', handle: rebound };
    // A structured turn is `running` from just before its CLI is launched: with no live process
    // on record and nothing in the transcript, the CLI may have it (a cal killed between the
    // spawn and the write of its pid), so it is lost rather than risked twice.
    if (provider.transport === 'structured' && turn.status === 'running') return { action: 'marked_lost' };
  }
  return { action: 'delivered' };
}

/** How far the settled mark must move before it is written again (one fsync'd write per this many turns). */
const MARK_STEP = 8;

/**
 * Before a new message goes in: an earlier turn the CLI received but whose cal stopped following
 * it (a --timeout, a killed cal) is settled from the transcript first. While the CLI is still
 * working on it, the handle is busy (or, with --wait, waited for): a second message would be
 * folded into the running turn and the first answer lost. Only the records the handle's settled
 * mark leaves open are read, so the cost does not grow with the session.
 */
export async function settleEarlierTurns(ctx: SessionContext, handleId: string, current: TurnRecord, req: ExecOptions): Promise<void> {
  let mark = await ctx.store.settledMark(handleId);
  // A mark at or past this turn was not written for this folder's records: it is not trusted.
  if (mark.through >= current.seq) mark = { through: 0, open: [] };
  const open = new Set(mark.open);
  const read = await ctx.store.turnsWhere(handleId, (seq) => seq > mark.through || open.has(seq));
  // Files not all named by their seq: every record is read, and no mark is kept.
  const turns = read ? read.flatMap((r) => (r.turn ? [r.turn] : [])).sort((a, b) => a.seq - b.seq) : await ctx.store.listTurns(handleId);
  const settled = new Set(turns.filter((t) => terminalStatuses.has(t.status)).map((t) => t.id));
  for (const turn of turns) {
    if (turn.id === current.id || terminalStatuses.has(turn.status)) continue;
    // A turn that never left cal is recover's to deliver; one whose owner still runs is its own.
    if (turn.status !== 'running' && !(turn.status === 'sending' && turn.sentAt)) continue;
    if (turn.ownerPid !== null && turn.ownerPid !== process.pid && isProcessAlive(turn.ownerPid, turn.ownerStartTime)) continue;
    const plan = await recoveryPlan(ctx, handleId, turn, req.env);
    if (plan.action === 'delivered') continue;
    if (plan.action === 'waited_for_cli' && req.waitSeconds === undefined) {
      throw new CalError('busy', `handle ${handleId} is busy: the CLI is still working on turn ${turn.id} (its cal stopped waiting); retry when it ends, or pass --wait`);
    }
    const journal = await adoptTurn(ctx.store, turn);
    const waitS = req.waitSeconds === undefined || req.waitSeconds === Infinity ? req.timeoutSeconds : req.waitSeconds;
    await applyPlan(ctx, handleId, journal, plan, { ...req, ...(waitS !== undefined ? { timeoutSeconds: waitS } : {}) });
    if (terminalStatuses.has(journal.turn.status)) settled.add(turn.id);
  }
  if (read) await advanceSettledMark(ctx.store, handleId, mark, current.seq, read.filter((r) => !r.turn || !settled.has(r.turn.id)).map((r) => r.seq));
}

/**
 * Moves the mark up to just below the current turn. Every record under it was read above (a
 * record's seq is taken, and its file written, under the seq lock, so none below the current
 * turn can appear later); those not settled now, or not readable, stay open for the next turn.
 */
async function advanceSettledMark(store: StateStore, handleId: string, mark: SettledMark, currentSeq: number, unsettled: number[]): Promise<void> {
  const through = currentSeq - 1;
  const next: SettledMark = { through, open: [...new Set(unsettled.filter((seq) => seq <= through))].sort((a, b) => a - b) };
  if (next.through - mark.through >= MARK_STEP || next.open.length < mark.open.length) await store.saveSettledMark(handleId, next);
}
