import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { AgentSessionHandle } from '../../handles/schema.js';
import { errorKind, errorText, exists, type ScenarioContext } from '../context.js';
import { CertFailure } from '../types.js';
import { expectRecalled, expectRemembered, q, RECALL, remember, sameList, secs, sessionRequests } from './common.js';

/** Continuation: the second turn, whatever happened to the terminal in between. */

export async function handleRoundTrip(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir();
  const code = ctx.codeword('HANDLE');
  const name = `cert-${code.toLowerCase()}`;
  const first = await ctx.startCompleted(remember(code), { cwd: work.path, name });
  // Turn two: another cal process, in another folder, given nothing but the handle's name.
  const mark = ctx.scripted ? ctx.model.mark() : 0;
  const byName = await ctx.cal(['continue', name, '--json', RECALL]);
  ctx.check(byName.code === 0, `cal continue <name> exited ${byName.code}: ${q(byName.stderr || byName.stdout, 160)}`);
  ctx.check(byName.json?.handle === first.handle.id, `cal continue <name> answered for handle ${byName.json?.handle}, expected ${first.handle.id}`);
  const turn = byName.json.turn;
  ctx.check(turn?.status === 'completed', `turn two ended ${turn?.status}`);
  expectRecalled(ctx, turn, code);
  if (ctx.scripted) {
    const requests = sessionRequests(ctx, first.handle, mark);
    ctx.check(requests.length === 1, `the model saw ${requests.length} requests in the first session for turn two (a new session was started?)`);
    ctx.check(sameList(requests[0]!.userMessages, [remember(code), RECALL]), `turn two's request carried ${q(JSON.stringify(requests[0]!.userMessages), 120)}`);
  }
  // And by id, in this process.
  const byId = await ctx.continueCompleted(first.handle.id, `${RECALL} (by id)`);
  expectRecalled(ctx, byId.turn, code);
  ctx.note(`turn two by name from another process and folder, turn three by id: both recalled${ctx.scripted ? '; model saw the same native session' : ''}`);
}

export async function pasteIntoLivePane(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir();
  const code = ctx.codeword('LIVE');
  const { handle } = await ctx.startCompleted(remember(code), { cwd: work.path });
  const before = await ctx.sessions.describe(handle.id);
  ctx.check(before.currentPaneAlive, 'the pane is not alive after the first turn');
  const mark = ctx.scripted ? ctx.model.mark() : 0;
  const events: string[] = [];
  const { turn } = await ctx.continueCompleted(handle.id, RECALL, { onEvent: (e) => events.push(e.event) });
  expectRecalled(ctx, turn, code);
  ctx.check(sameList(events, ['running', 'completed']), `events were ${events.join(', ')}, expected running, completed (no relaunch)`);
  const after = await ctx.sessions.describe(handle.id);
  ctx.check(after.panes.length === 1 && after.panes[0]?.label === before.panes[0]?.label, `the session has ${after.panes.length} panes after a paste (${after.panes.map((p) => p.label).join(', ')})`);
  ctx.check(after.currentPaneAlive, 'the pane died after the paste');
  if (ctx.scripted) {
    const requests = sessionRequests(ctx, handle, mark);
    ctx.check(requests.length === 1, `the model saw ${requests.length} requests for one pasted message`);
    ctx.check(sameList(requests[0]!.userMessages, [remember(code), RECALL]), `the pasted turn's request carried ${q(JSON.stringify(requests[0]!.userMessages), 120)}`);
  }
  ctx.note(`pasted into live pane ${before.panes[0]?.label ?? ''}: no relaunch${ctx.scripted ? ', model saw 1 new user message' : ''}, recalled`);
}

export async function sessionContinuationAfterTmuxLoss(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir();
  const code = ctx.codeword('LOST');
  const { handle } = await ctx.startCompleted(remember(code), { cwd: work.path });
  const before = await ctx.sessions.describe(handle.id);
  await ctx.sessions.killTmux(handle.id);
  const gone = await ctx.sessions.describe(handle.id);
  ctx.check(!gone.currentPaneAlive, 'the pane is still alive after kill-tmux');
  const events: string[] = [];
  const { turn, handle: after } = await ctx.continueCompleted(handle.id, RECALL, { onEvent: (e) => events.push(e.event) });
  expectRecalled(ctx, turn, code);
  ctx.check(sameList(events, ['lost_tmux', 'resuming', 'running', 'completed']), `events were ${events.join(', ')}, expected lost_tmux, resuming, running, completed`);
  ctx.check(after.provider.nativeSessionId === handle.provider.nativeSessionId, `the native session changed from ${handle.provider.nativeSessionId} to ${after.provider.nativeSessionId}`);
  const view = await ctx.sessions.describe(handle.id);
  ctx.check(view.panes.length === 2, `the session has ${view.panes.length} panes, expected the new one and the archived one`);
  ctx.check(view.panes[0]?.launch === 'resume' && view.panes[0].current && view.currentPaneAlive, 'the current pane is not a live native resume');
  ctx.check(view.panes[1]?.label === before.panes[0]?.label && view.panes[1]?.endedAt !== null, 'the lost pane was not archived');
  ctx.note(`pane killed; continue: lost_tmux → resuming → running → completed in a new pane, same native id, recalled`);
}

export async function nativeResumeOnlyLatestMessage(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir();
  const code = ctx.codeword('ONLY');
  const m1 = remember(code);
  const m2 = `Also note the number ${ctx.codeword('N')}.`;
  const m3 = RECALL;
  const { handle } = await ctx.startCompleted(m1, { cwd: work.path });
  await ctx.continueCompleted(handle.id, m2);
  await ctx.sessions.killTmux(handle.id);
  const mark = ctx.model.mark();
  const { turn } = await ctx.continueCompleted(handle.id, m3);
  expectRecalled(ctx, turn, code);
  const requests = sessionRequests(ctx, handle, mark);
  ctx.check(requests.length >= 1, 'the model saw no request from the resumed session');
  for (const r of requests) {
    ctx.check(r.lastUserMessage === m3, `after the resume the model got ${q(r.lastUserMessage, 100)} as the new message, expected only ${q(m3)} (earlier turns replayed?)`);
    ctx.check(sameList(r.userMessages, [m1, m2, m3]), `the resumed request carried ${q(JSON.stringify(r.userMessages), 160)}, expected each earlier turn once and the new message once`);
  }
  const all = ctx.model.since(0);
  const sentAsNew = (m: string) => all.filter((r) => r.lastUserMessage === m && r.userMessages.length === [m1, m2, m3].indexOf(m) + 1).length;
  ctx.check(sentAsNew(m1) === 1 && sentAsNew(m2) === 1, `earlier messages were sent as new messages ${sentAsNew(m1)} and ${sentAsNew(m2)} times, expected once each`);
  ctx.note(`resumed request: ${requests[0]!.userMessages.length} user messages (2 from history, each once; 1 new); model saw 1 new user message`);
}

export async function nonContinuableError(ctx: ScenarioContext): Promise<void> {
  // The pane dies before the CLI recorded its first message: there is no native id to resume.
  let handle: AgentSessionHandle | null = null;
  let startError = '';
  let killedAfter = 0;
  let attemptMark = 0;
  for (let attempt = 1; attempt <= 3 && !handle; attempt++) {
    const work = await ctx.workDir();
    attemptMark = ctx.scripted ? ctx.model.mark() : 0;
    const known = new Set((await ctx.store.listHandles()).map((h) => h.id));
    const launched = Date.now();
    const started = ctx.start(remember(ctx.codeword('NEVER')), { cwd: work.path, timeoutSeconds: 30 }).then(
      (r) => ({ ok: r, err: null as unknown }),
      (err: unknown) => ({ ok: null, err }),
    );
    let mine: AgentSessionHandle | undefined;
    await ctx.waitFor('the first pane', async () => {
      mine = (await ctx.store.listHandles()).find((h) => !known.has(h.id) && h.panes.length > 0);
      return mine !== undefined;
    }, 30_000, 20);
    await ctx.sessions.killTmux(mine!.id);
    killedAfter = Date.now() - launched;
    const res = await started;
    const now = await ctx.store.loadHandle(mine!.id);
    if (now.provider.nativeSessionId) continue; // the CLI was quicker than the kill: try again
    ctx.check(res.ok === null || res.ok.turn.status !== 'completed', 'start reported a completed turn although the pane was killed before the CLI recorded it');
    startError = res.err ? errorText(res.err) : `turn ${res.ok?.turn.status}`;
    handle = now;
  }
  if (!handle) throw new CertFailure('could not kill the pane before the CLI recorded its first message (3 tries)');
  const mark = ctx.scripted ? ctx.model.mark() : 0;
  const panesBefore = handle.panes.length;
  let kind: string | null = null;
  try {
    await ctx.continue(handle.id, 'Carry on.');
  } catch (err) {
    kind = errorKind(err);
  }
  ctx.check(kind === 'non_continuable', `continue of a session that never recorded a turn gave ${kind ?? 'a turn'}, expected non_continuable`);
  const after = await ctx.store.loadHandle(handle.id);
  ctx.check(after.panes.length === panesBefore && !after.provider.nativeSessionId, 'continue launched a new pane (a silent fresh start)');
  if (ctx.scripted) {
    ctx.check(ctx.model.since(mark).length === 0, 'the model got a request after the refused continue (a silent fresh start)');
    ctx.check(ctx.model.since(attemptMark).length === 0, 'the model got a turn from a session whose pane was killed before its first message');
  }
  ctx.note(`pane killed ${secs(killedAfter)} after launch, before the first message was recorded: start ${q(startError, 70)}; continue: non_continuable, no new pane, no request`);
}

export async function stableWorkingDir(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir({ viaSymlink: true });
  const code = ctx.codeword('STABLE');
  const { handle } = await ctx.startCompleted(remember(code), { cwd: work.path });
  // On tmux the resume is a relaunch in a new pane; the structured transport relaunches every turn.
  if (handle.provider.transport === 'tmux') await ctx.sessions.killTmux(handle.id);
  // The caller is elsewhere and names no folder: the resume still runs in the session's own.
  const resumed = await ctx.continueCompleted(handle.id, RECALL);
  expectRecalled(ctx, resumed.turn, code);
  const same = await ctx.continueCompleted(handle.id, `${RECALL} (same folder by its real path)`, { cwd: work.realPath });
  expectRecalled(ctx, same.turn, code);
  const expectStale = async (what: string, opts: { cwd?: string }): Promise<void> => {
    const mark = ctx.scripted ? ctx.model.mark() : 0;
    const panes = (await ctx.store.loadHandle(handle.id)).panes.length;
    let kind: string | null = null;
    let field: unknown;
    try {
      await ctx.continue(handle.id, `${RECALL} (${what})`, opts);
    } catch (err) {
      kind = errorKind(err);
      field = (err as { details?: { field?: unknown } }).details?.field;
    }
    ctx.check(kind === 'stale_handle' && field === 'workingDir', `continue with ${what} gave ${kind ?? 'a turn'}${field ? ` (${String(field)})` : ''}, expected stale_handle naming workingDir`);
    ctx.check((await ctx.store.loadHandle(handle.id)).panes.length === panes, `continue with ${what} launched a pane`);
    if (ctx.scripted) ctx.check(ctx.model.since(mark).length === 0, `continue with ${what} reached the model`);
  };
  const other = await ctx.workDir();
  await expectStale('another folder', { cwd: other.path });
  await fs.rm(work.realPath, { recursive: true, force: true });
  await fs.mkdir(work.realPath);
  await expectStale('the folder deleted and recreated', {});
  ctx.note('resumed in the original folder from elsewhere and via its real path (recalled); another folder and a recreated folder: stale_handle, nothing launched');
}

export async function pinnedExecutable(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir();
  const code = ctx.codeword('PINNED');
  const { handle } = await ctx.startCompleted(remember(code), { cwd: work.path });
  // Another executable of the same name first on PATH, of another version, that notes each run.
  const bin = path.join(ctx.root, 'impostor-bin');
  const ran = path.join(ctx.root, 'impostor-ran');
  await fs.mkdir(bin, { recursive: true });
  await fs.writeFile(
    path.join(bin, ctx.settings.executable),
    `#!/bin/sh\necho "$@" >> '${ran}'\nif [ "$1" = "--version" ]; then echo "99.99.99"; exit 0; fi\nexit 1\n`,
    { mode: 0o755 },
  );
  const env = { ...ctx.env, PATH: `${bin}:${ctx.env.PATH ?? ''}` };
  await ctx.sessions.killTmux(handle.id);
  const { turn, handle: after } = await ctx.continueCompleted(handle.id, RECALL, { env });
  expectRecalled(ctx, turn, code);
  ctx.check(!exists(ran), `the ${ctx.settings.executable} first on PATH ran (${q(await fs.readFile(ran, 'utf8').catch(() => ''), 80)}), not the pinned one`);
  ctx.check(after.provider.cli?.realPath === handle.provider.cli?.realPath && after.provider.cli?.version === handle.provider.cli?.version, 'the pinned executable of the handle changed');
  ctx.note(`another ${ctx.settings.executable} (99.99.99) first on PATH: the resume ran the pinned ${handle.provider.cli?.version} at ${handle.provider.cli?.realPath}; the other never ran`);
}

export function structuredResume(ctx: ScenarioContext): Promise<void> {
  return resumeOn(ctx, 'structured');
}

/** The same over ACP: session/new, then session/load, whose replay of the history is no answer. */
export function acpResume(ctx: ScenarioContext): Promise<void> {
  return resumeOn(ctx, 'acp');
}

async function resumeOn(ctx: ScenarioContext, transport: 'structured' | 'acp'): Promise<void> {
  const work = await ctx.workDir();
  const code = ctx.codeword(transport === 'acp' ? 'ACP' : 'JSON');
  const m1 = remember(code);
  const first = await ctx.startCompleted(m1, { cwd: work.path, transport });
  expectRemembered(ctx, first.turn, code);
  const id = first.handle.provider.nativeSessionId;
  ctx.check(id, 'the structured session has no native id after its first turn');
  const events: string[] = [];
  const mark = ctx.scripted ? ctx.model.mark() : 0;
  const second = await ctx.continueCompleted(first.handle.id, RECALL, { onEvent: (e) => events.push(e.event) });
  expectRecalled(ctx, second.turn, code);
  ctx.check(second.handle.provider.nativeSessionId === id, `the native id changed from ${id} to ${second.handle.provider.nativeSessionId}: a fresh session instead of a resume`);
  ctx.check(events.includes('resuming'), `events were ${events.join(', ')}, expected a native resume`);
  const m3 = `${RECALL} (again)`;
  const third = await ctx.continueCompleted(first.handle.id, m3);
  expectRecalled(ctx, third.turn, code);
  ctx.check(third.handle.provider.nativeSessionId === id, 'the native id changed on the third turn');
  const view = await ctx.sessions.describe(first.handle.id);
  ctx.check(view.panes.length === 0, 'the structured session opened a pane');
  if (ctx.scripted) {
    const requests = sessionRequests(ctx, first.handle, mark);
    ctx.check(requests.length === 2, `the model saw ${requests.length} requests for two resumed turns`);
    ctx.check(sameList(requests[0]!.userMessages, [m1, RECALL]) && sameList(requests[1]!.userMessages, [m1, RECALL, m3]), `resumed requests carried ${q(JSON.stringify(requests.map((r) => r.userMessages)), 160)}`);
  }
  ctx.note(`${transport}: two resumes of native id …${id.slice(-8)}, each with only the new message${ctx.scripted ? ' (model saw history once)' : ''}; recalled`);
}

export async function noHistoryReplayAfterRestart(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir();
  const code = ctx.codeword('REPLAY');
  const { handle } = await ctx.startCompleted(remember(code), { cwd: work.path });
  // Earlier turns with an answer and with tool activity of their own.
  const toolNonce = ctx.codeword('tool').toLowerCase();
  if (ctx.scripted) await ctx.continueCompleted(handle.id, `Run it [[cal:shell=echo ${toolNonce}]]`);
  else await ctx.continueCompleted(handle.id, 'Please also remember that the sky is green here.');
  const checkNew = async (label: string, args: string[], expected: ((answer: string) => boolean), expectedText: string): Promise<void> => {
    const before = (await ctx.turns(handle.id)).map((t) => `${t.id}:${t.status}:${t.answer}`);
    const run = await ctx.cal(['continue', handle.id, '--json', ...args]);
    ctx.check(run.code === 0, `${label}: a new cal process exited ${run.code}: ${q(run.stderr || run.stdout, 160)}`);
    const turn = run.json?.turn;
    ctx.check(turn && expected(turn.answer ?? ''), `${label}: the new process reported ${q(turn?.answer, 120)}, expected only ${expectedText}`);
    ctx.check(Array.isArray(turn.tools) && turn.tools.length === 0, `${label}: the new turn lists ${turn.tools?.length} tool calls from earlier turns`);
    const after = (await ctx.turns(handle.id)).map((t) => `${t.id}:${t.status}:${t.answer}`);
    ctx.check(sameList(after.slice(0, before.length), before), `${label}: earlier turn records changed`);
  };
  const recallText = ctx.scripted ? `The codeword was ${code}.` : code;
  const matchRecall = (a: string) => (ctx.scripted ? a === recallText : a.toUpperCase().includes(code.toUpperCase()));
  await checkNew('pane alive', [RECALL], matchRecall, q(recallText));
  const kill = await ctx.cal(['kill-tmux', handle.id]);
  ctx.check(kill.code === 0, `cal kill-tmux exited ${kill.code}`);
  const fresh = ctx.codeword('only');
  if (ctx.scripted) await checkNew('after a resume', [`Say it [[cal:reply=${fresh}]]`], (a) => a === fresh, q(fresh));
  else await checkNew('after a resume', [RECALL], matchRecall, code);
  ctx.note('new cal processes (pane alive, then after a native resume) reported only the new turn: exact answer, no earlier tool activity, earlier records untouched');
}
