import type { TurnResult } from '../../sessions/agent-sessions.js';
import { errorKind, errorText, sleep, type ScenarioContext } from '../context.js';
import { CertFailure } from '../types.js';
import { expectRecalled, q, RECALL, remember, secs, sessionRequests } from './common.js';

/** Interruption: a turn cut short by the user or by a killed terminal ends exactly once. */

type Settled = { ok: TurnResult; err: null } | { ok: null; err: unknown };

function settle(p: Promise<TurnResult>): Promise<Settled> {
  return p.then(
    (ok) => ({ ok, err: null }),
    (err: unknown) => ({ ok: null, err }),
  );
}

/** Sends a slowly streamed answer and interrupts it while it streams (Escape, or the CLI's own key, as a user would). */
async function interruptSlowTurn(ctx: ScenarioContext, ref: string): Promise<{ result: Settled; settleMs: number }> {
  const nonce = ctx.codeword('INT');
  const text = `Take your time ${nonce}`;
  const mark = ctx.model.mark();
  // Escape before the first streamed byte can make a CLI record nothing at all, so the answer
  // streams for ~8 s and Escape comes mid-stream.
  const running = settle(ctx.continue(ref, `${text} [[cal:chunks=12]][[cal:chunk-delay=700]][[cal:lines=12]]`));
  await ctx.waitFor('the slow answer to start streaming', () => ctx.model.carrying(text, mark).length > 0, 30_000);
  await sleep(2500);
  const pressed = Date.now();
  await ctx.interrupt(ref);
  const result = await running;
  return { result, settleMs: Date.now() - pressed };
}

export async function interruptedTurnSettles(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir();
  const { handle } = await ctx.startCompleted(remember(ctx.codeword('ESC')), { cwd: work.path });
  const { result, settleMs } = await interruptSlowTurn(ctx, handle.id);
  if (!result.ok) throw new CertFailure(`the interrupted turn raised ${errorText(result.err)} instead of settling as interrupted`);
  const turn = result.ok.turn;
  ctx.check(turn.status === 'interrupted', `Escape mid-answer ended the turn ${turn.status}${turn.answer ? ` with ${q(turn.answer, 60)}` : ''}, expected interrupted`);
  ctx.check(settleMs < 6000, `the interrupt took ${secs(settleMs)} to settle (the stream would have ended by itself)`);
  const view = await ctx.sessions.describe(handle.id);
  const ends = view.events.filter((e) => e.turn === turn.id && ['completed', 'failed', 'interrupted', 'lost'].includes(e.event));
  ctx.check(ends.length === 1 && ends[0]?.event === 'interrupted', `the turn ended ${ends.length} times (${ends.map((e) => e.event).join(', ')})`);
  // The session takes the next message in the same pane.
  const next = await ctx.continueCompleted(handle.id, 'Are you still there?');
  ctx.check(next.turn.answer === 'Received: Are you still there?', `the turn after the interrupt answered ${q(next.turn.answer)}`);
  ctx.note(`Escape mid-stream: interrupted ${secs(settleMs)} after the key, ended once; the next message ran in the same pane`);
}

export async function interruptKeepsResume(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir();
  const code = ctx.codeword('KEEP');
  const { handle } = await ctx.startCompleted(remember(code), { cwd: work.path });
  const { result } = await interruptSlowTurn(ctx, handle.id);
  ctx.check(result.ok?.turn.status === 'interrupted', `the turn ended ${result.ok?.turn.status ?? errorText(result.err)}, expected interrupted`);
  await ctx.sessions.killTmux(handle.id);
  const mark = ctx.model.mark();
  const events: string[] = [];
  const { turn } = await ctx.continueCompleted(handle.id, RECALL, { onEvent: (e) => events.push(e.event) });
  ctx.check(events.includes('resuming'), `events were ${events.join(', ')}, expected a native resume`);
  expectRecalled(ctx, turn, code);
  const requests = sessionRequests(ctx, handle, mark);
  const carried = requests[0]?.userMessages ?? [];
  ctx.check(carried.filter((m) => m === remember(code)).length === 1, `the resumed request carried the first message ${carried.filter((m) => m === remember(code)).length} times`);
  ctx.check(carried.at(-1) === RECALL && requests.every((r) => r.lastUserMessage === RECALL), `the resumed requests' last user messages were ${q(JSON.stringify(requests.map((r) => r.lastUserMessage)), 120)}`);
  ctx.note(`after an interrupt and a lost pane, native resume recalled; the history (${carried.length} user messages) had the first turn once`);
}

export async function killedMidTurnSettles(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir();
  const code = ctx.codeword('KILL');
  const { handle } = await ctx.startCompleted(remember(code), { cwd: work.path });
  const text = `Take your time ${ctx.codeword('K')}`;
  const mark = ctx.model.mark();
  const running = settle(ctx.continue(handle.id, `${text} [[cal:delay=15000]]`));
  await ctx.waitFor('the slow turn to reach the model', () => ctx.model.carrying(text, mark).length > 0, 30_000);
  await ctx.waitForTurn(handle.id, `${text} [[cal:delay=15000]]`, ['running'], 10_000);
  const killed = Date.now();
  await ctx.sessions.killTmux(handle.id);
  const result = await running;
  const settleMs = Date.now() - killed;
  const status = result.ok ? result.ok.turn.status : errorKind(result.err);
  ctx.check(status === 'lost', `the turn whose pane was killed ended ${status}${result.err ? ` (${errorText(result.err)})` : ''}, expected lost`);
  ctx.check(settleMs < 5000, `the lost turn took ${secs(settleMs)} to settle after the kill`);
  const turns = await ctx.turns(handle.id);
  const record = turns.find((t) => t.message.startsWith(text));
  ctx.check(record?.status === 'lost' && record.answer === null, `the turn record is ${record?.status ?? 'missing'} with answer ${q(record?.answer)}`);
  if (ctx.settings.capabilities.nativeResumeInTmux) {
    const next = await ctx.continueCompleted(handle.id, RECALL);
    expectRecalled(ctx, next.turn, code);
    ctx.note(`pane killed mid-turn: lost ${secs(settleMs)} later (no answer), and the next continue resumed and recalled`);
  } else {
    ctx.note(`pane killed mid-turn: lost ${secs(settleMs)} later, with no answer`);
  }
}
