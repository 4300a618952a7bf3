import { promises as fs } from 'node:fs';
import { errorText, sleep, type ScenarioContext } from '../context.js';
import { processesMarkedBy } from '../processes.js';
import { CertFailure } from '../types.js';
import type { ModelRequestLogEntry } from '../../model/server.js';
import { expectRecalled, q, RECALL, remember, requestsOfSession, secs, sessionRequests } from './common.js';

/** Concurrency and hygiene: one continuation at a time, sessions apart, nothing left behind. */

export async function concurrentContinuationBusy(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir();
  const code = ctx.codeword('RACE');
  const { handle } = await ctx.startCompleted(remember(code), { cwd: work.path });
  const a = `Racer A ${ctx.codeword('A')}`;
  const b = `Racer B ${ctx.codeword('B')}`;
  const mark = ctx.scripted ? ctx.model.mark() : 0;
  // Two cal processes continue the same handle at the same moment.
  const started = Date.now();
  const delay = ctx.scripted ? ' [[cal:delay=4000]]' : '';
  const [ra, rb] = await Promise.all([ctx.cal(['continue', handle.id, '--json', `${a}${delay}`]), ctx.cal(['continue', handle.id, '--json', `${b}${delay}`])]);
  const codes = [ra.code, rb.code].sort();
  ctx.check(codes[0] === 0 && codes[1] === 5, `the two concurrent continuations exited ${ra.code} and ${rb.code}, expected one 0 and one 5 (busy)`);
  const [winner, loser, winText, loseText] = ra.code === 0 ? [ra, rb, a, b] : [rb, ra, b, a];
  ctx.check(loser.json?.error?.kind === 'busy', `the loser reported ${q(JSON.stringify(loser.json?.error), 100)}, expected busy`);
  ctx.check(winner.json?.turn?.status === 'completed', `the winner's turn ended ${winner.json?.turn?.status}`);
  if (ctx.scripted) {
    ctx.check(winner.json.turn.answer === `Received: ${winText}`, `the winner's answer was ${q(winner.json.turn.answer)}`);
    const requests = sessionRequests(ctx, handle, mark);
    ctx.check(requests.some((r) => (r.lastUserMessage ?? '').includes(winText)), "the winner's message never reached the model");
    ctx.check(!requests.some((r) => r.userMessages.some((m) => m.includes(loseText))), "the busy caller's message reached the model");
  }
  const turns = await ctx.turns(handle.id);
  // A refusal is no turn: it leaves the handle's turn list as it was (issue 41).
  const refused = turns.find((t) => t.message.startsWith(loseText));
  ctx.check(refused === undefined, `the busy caller left a turn record (${refused?.status}); a refusal must leave the turn list unchanged`);
  const next = await ctx.continueCompleted(handle.id, RECALL);
  expectRecalled(ctx, next.turn, code);
  ctx.note(`two processes at once: one ran, one busy (exit 5) within ${secs(Date.now() - started)}; the busy message never reached the model; the session went on`);
}

export async function parallelIsolation(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir({ git: true });
  const mark = ctx.scripted ? ctx.model.mark() : 0;
  const first = `Certification parallel start ${ctx.codeword('SAME')}`;
  // Two sessions started at the same moment, in the same folder, with the same first message.
  const [s1, s2] = await Promise.all([ctx.startCompleted(first, { cwd: work.path }), ctx.startCompleted(first, { cwd: work.path })]);
  const id1 = s1.handle.provider.nativeSessionId;
  const id2 = s2.handle.provider.nativeSessionId;
  ctx.check(id1 && id2 && id1 !== id2, `the two sessions bound native ids ${id1} and ${id2}; each needs its own`);
  const codes = [ctx.codeword('ALPHA'), ctx.codeword('BRAVO')];
  await Promise.all([ctx.continueCompleted(s1.handle.id, remember(codes[0]!)), ctx.continueCompleted(s2.handle.id, remember(codes[1]!))]);
  const [r1, r2] = await Promise.all([ctx.continueCompleted(s1.handle.id, RECALL), ctx.continueCompleted(s2.handle.id, RECALL)]);
  expectRecalled(ctx, r1.turn, codes[0]!);
  expectRecalled(ctx, r2.turn, codes[1]!);
  const d1 = await ctx.sessions.describe(s1.handle.id);
  const d2 = await ctx.sessions.describe(s2.handle.id);
  const answers1 = d1.turns.map((t) => t.answer ?? '').join('\n');
  const answers2 = d2.turns.map((t) => t.answer ?? '').join('\n');
  ctx.check(!answers1.includes(codes[1]!) && !answers2.includes(codes[0]!), "a session's turn records hold the other session's answer");
  let told = '';
  if (ctx.scripted) {
    const isolation = requestIsolation(ctx.model.since(mark), [id1, id2], [codes[0]!, codes[1]!]);
    told = isolation.told;
    const [failure] = isolation.failures;
    ctx.check(failure === undefined, failure ?? '');
  }
  ctx.note(`two simultaneous starts in one folder with the same first message: native ids …${id1.slice(-8)} and …${id2.slice(-8)}, each recalled only its own codeword${ctx.scripted ? `; the model told them apart ${told}` : ''}`);
}

/** What the scripted model's requests say about two sessions kept apart, and how it told them apart. */
export interface RequestIsolation {
  told: string;
  /** Why the requests show the sessions mixed, in the order they are checked; empty when apart. */
  failures: string[];
}

/**
 * CertParallelIsolation's reading of the model's requests, for two sessions (native ids `ids`)
 * that each remembered one of `codes`. With session keys (Claude, Codex, Pi from 0.68.1), each
 * session's requests are those with its key, and none may carry the other's codeword. A CLI whose
 * requests name no session (Pi before 0.68.1) is read by what each request carries: both sessions
 * began with the same message, so a request holding both codewords is one session's history in
 * the other.
 */
export function requestIsolation(
  requests: readonly Pick<ModelRequestLogEntry, 'sessionKey' | 'userMessages'>[],
  ids: readonly [string, string],
  codes: readonly [string, string],
): RequestIsolation {
  const carries = (r: (typeof requests)[number], code: string) => r.userMessages.some((m) => m.includes(code));
  const failures: string[] = [];
  if (requests.some((r) => r.sessionKey === ids[0] || r.sessionKey === ids[1])) {
    const [q1, q2] = [requestsOfSession(requests, ids[0]), requestsOfSession(requests, ids[1])];
    if (!(q1.length > 0 && q2.length > 0 && q1.every((r) => r.sessionKey === ids[0]) && q2.every((r) => r.sessionKey === ids[1]))) {
      failures.push('the model could not tell the two sessions apart by their own session keys');
    }
    if (q1.some((r) => carries(r, codes[1])) || q2.some((r) => carries(r, codes[0]))) failures.push("one session's messages reached the model in the other session");
    return { told: 'by their session keys', failures };
  }
  if (!(requests.some((r) => carries(r, codes[0])) && requests.some((r) => carries(r, codes[1])))) failures.push("the model never saw one of the two sessions' messages");
  if (requests.some((r) => carries(r, codes[0]) && carries(r, codes[1]))) failures.push("one request carried both sessions' messages: one session's history reached the other");
  return { told: 'by what their requests carry (the CLI names no session in them)', failures };
}

export async function cleanup(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir();
  const probe = await ctx.mcpProbe(work);
  const code = ctx.codeword('CLEAN');
  const { handle } = await ctx.startCompleted(remember(code), { cwd: work.path, mcpConfig: probe.config });
  const locks = async () => (await fs.readdir(ctx.store.layout.locks).catch(() => [] as string[])).filter((f) => f.endsWith('.lock'));
  ctx.check((await locks()).length === 0, `a completed turn left locks behind: ${(await locks()).join(', ')}`);
  const running = await processesMarkedBy(ctx.root);
  if (running === null) {
    // No /proc: the pane and the locks are still checked.
    ctx.note('no /proc here: process check skipped');
  } else {
    ctx.check(running.length > 0, "cannot see the session's processes, so their cleanup cannot be proved");
  }
  await ctx.sessions.killTmux(handle.id);
  let left = running;
  const deadline = Date.now() + 5000;
  for (;;) {
    left = await processesMarkedBy(ctx.root);
    if (!left || left.length === 0 || Date.now() > deadline) break;
    await sleep(200);
  }
  ctx.check(!left || left.length === 0, `after kill-tmux ${left?.length} processes are left: ${q(left?.map((p) => `${p.pid} ${p.command}`).join(' | '), 200)}`);
  const view = await ctx.sessions.describe(handle.id);
  ctx.check(!view.currentPaneAlive, 'the pane is still alive after kill-tmux');
  ctx.check(view.events.some((e) => e.event === 'pane_killed'), 'no pane_killed event was recorded');
  ctx.check((await locks()).length === 0, `locks left after kill-tmux: ${(await locks()).join(', ')}`);
  if (running) ctx.note(`kill-tmux: pane gone, 0 of ${running.length} processes left (CLI and MCP server), 0 locks`);
  else ctx.note('kill-tmux: pane gone, 0 locks');
  // The logical session lives on.
  const next = await ctx.continue(handle.id, RECALL).catch((err: unknown) => {
    throw new CertFailure(`continue after kill-tmux failed: ${errorText(err)}`);
  });
  expectRecalled(ctx, next.turn, code);
}
