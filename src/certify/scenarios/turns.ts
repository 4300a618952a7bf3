import { errorKind, errorText, type ScenarioContext } from '../context.js';
import { CertFailure } from '../types.js';
import { expectRecalled, firstDifference, outputLines, q, RECALL, remember, secs, sessionRequests, SHELL_PROBE_WAIT_S, shellProbe } from './common.js';

/** Turns: what goes in, what comes out, and when cal says the turn ended. */

/** A 6 KB message of many lines with quotes, shell syntax, markdown and non-ASCII (no tabs: TUIs expand them). */
function largeMessage(nonce: string): string {
  const lines = [`paste-check ${nonce} begins`];
  for (let i = 0; lines.join('\n').length < 6000; i++) {
    lines.push(
      `${i % 7 === 3 ? '/not-a-command ' : i % 7 === 5 ? '# heading-like ' : ''}line ${i}: "double" 'single' $(echo x) \`uname\` $HOME ünïcødé ✓ 日本語 — \\n {braces} [[brackets]] <tag> & 100%`,
    );
    if (i % 10 === 9) lines.push('');
  }
  lines.push(`paste-check ${nonce} ends`);
  return lines.join('\n');
}

export async function promptPaste(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir();
  const { handle } = await ctx.startCompleted(remember(ctx.codeword('PASTE')), { cwd: work.path });
  const nonce = ctx.codeword('P');
  const body = largeMessage(nonce);
  const mark = ctx.model.mark();
  const before = sessionRequests(ctx, handle).at(-1)?.userMessages.length ?? 0;
  const { turn } = await ctx.continueCompleted(handle.id, `[[cal:echo]]\n${body}`);
  const requests = ctx.model.since(mark).filter((r) => (r.lastUserMessage ?? '').includes(nonce) || r.userMessages.some((m) => m.includes(nonce)));
  const carrying = requests.filter((r) => (r.lastUserMessage ?? '').includes(`paste-check ${nonce} begins`));
  ctx.check(carrying.length === 1, `the model saw the pasted message as a new message in ${carrying.length} requests, expected exactly 1 (submitted once)`);
  const last = carrying[0]!;
  const seen = last.lastUserMessage ?? '';
  ctx.check(seen.includes(body), `the model received the message altered or cut: ${firstDifference(seen.slice(Math.max(0, seen.indexOf(`paste-check ${nonce} begins`))), body)}`);
  // A CLI may wrap a large paste in its own markers (Claude Code: <pasted_content>); nothing else may be added.
  const added = seen.length - body.length - '[[cal:echo]]\n'.length;
  ctx.check(added < 200, `the model received ${added} characters more than the message`);
  ctx.check(last.userMessages.length === before + 1, `the paste arrived as ${last.userMessages.length - before} user messages, expected 1 (one submission, not several)`);
  ctx.check(requests.every((r) => r === last || (r.lastUserMessage ?? '').includes(body)), 'a request carried part of the pasted message');
  ctx.check((turn.answer ?? '').includes(body), `the echoed answer does not hold the message: ${firstDifference((turn.answer ?? '').slice(Math.max(0, (turn.answer ?? '').indexOf(`paste-check ${nonce} begins`))), body)}`);
  ctx.note(`${body.length} characters on ${body.split('\n').length} lines: submitted once, whole${added > 0 ? ` (the CLI added ${added} characters of its own around it)` : ''}; model saw 1 new user message`);
}

export async function completionFromTranscript(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir();
  const { handle } = await ctx.startCompleted(remember(ctx.codeword('DONE')), { cwd: work.path });
  const nonce = ctx.codeword('STREAM');
  const reply = `alpha ${nonce} bravo charlie delta echo foxtrot golf hotel india juliet kilo lima`;
  const chunks = 8;
  const gap = 700;
  const started = Date.now();
  const { turn } = await ctx.continueCompleted(handle.id, `Stream slowly [[cal:chunks=${chunks}]][[cal:chunk-delay=${gap}]][[cal:reply=${reply}]]`);
  const took = Date.now() - started;
  const streamMs = (chunks - 1) * gap;
  ctx.check(turn.answer === reply, `the answer was ${q(turn.answer, 100)}, expected the whole streamed reply ${q(reply, 100)} (a pause was taken for the end?)`);
  ctx.check(took >= streamMs, `the turn was reported done after ${secs(took)}, before the ${secs(streamMs)} stream could have ended`);
  ctx.check(turn.turnKey, "the turn has no key from the CLI's own record");
  const view = await ctx.sessions.describe(handle.id);
  ctx.check(view.currentPaneAlive, 'the CLI exited: completion must come from its record while it stays open');
  ctx.note(`answer complete after a ${secs(streamMs)} stream with ${secs(gap)} pauses (done at ${secs(took)}); CLI still open; turn key …${turn.turnKey.slice(-8)}`);
}

export async function slowToolNoFalseIdle(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir();
  const { handle } = await ctx.startCompleted(remember(ctx.codeword('SLOW')), { cwd: work.path });
  const nonce = ctx.codeword('slow').toLowerCase();
  const toolSeconds = 8;
  const mark = ctx.model.mark();
  const started = Date.now();
  const { turn } = await ctx.continueCompleted(handle.id, `Run the slow tool [[cal:shell=${shellProbe(`sleep ${toolSeconds} && echo ${nonce}`)}]]`);
  const took = Date.now() - started;
  ctx.check(took >= toolSeconds * 1000, `the turn was reported done after ${secs(took)}, while the tool sleeps ${toolSeconds}s`);
  const shell = turn.tools.find((t) => t.kind === 'shell');
  ctx.check(shell && outputLines(shell.output).includes(nonce), `the slow tool's output is not on the turn (tools: ${q(JSON.stringify(turn.tools), 120)})`);
  ctx.check(turn.answer === `Tool finished: ${nonce}`, `the answer was ${q(turn.answer)}, expected the final answer after the tool result`);
  const requests = ctx.model.since(mark);
  ctx.check(requests.length >= 2 && (requests.at(-1)?.reply ?? '').startsWith('Tool finished'), `the model saw ${requests.length} requests for the turn; the last one answered ${q(requests.at(-1)?.reply)}`);
  ctx.note(`a ${toolSeconds}s tool call (its shell open ${SHELL_PROBE_WAIT_S} s more after its output): turn ended ${secs(took)} after sending, with the answer that came after the tool result`);
}

export async function finalAnswerFidelity(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir();
  const { handle } = await ctx.startCompleted(remember(ctx.codeword('EXACT')), { cwd: work.path });
  const mark = ctx.model.mark();
  const lines = await ctx.continueCompleted(handle.id, 'Forty lines please [[cal:lines=40]]');
  const expected = ctx.model.since(mark).at(-1)?.reply ?? '';
  ctx.check(expected.split('\n').length === 40, `the scripted model answered ${expected.split('\n').length} lines, expected 40`);
  ctx.check(lines.turn.answer === expected, `the answer is not the model's text byte for byte: ${firstDifference(lines.turn.answer ?? '', expected)}`);
  const shaped = 'Result:\\n\\n- first item with `code`\\n- second item **bold**\\n\\n> quoted line\\n    four spaces in\\nend.';
  const wanted = shaped.replace(/\\n/g, '\n');
  const md = await ctx.continueCompleted(handle.id, `Shaped text [[cal:reply=${shaped}]]`);
  ctx.check(md.turn.answer === wanted, `the markdown-shaped answer came back changed: ${firstDifference(md.turn.answer ?? '', wanted)}`);
  ctx.note(`40 lines of unicode, emoji, quotes and <tags> (${expected.length} chars) and a markdown-shaped answer: byte for byte, no terminal chrome`);
}

export async function toolActivityRecorded(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir();
  const probe = await ctx.mcpProbe(work);
  const { handle } = await ctx.startCompleted(remember(ctx.codeword('TOOLS')), { cwd: work.path, mcpConfig: probe.config });
  const shellNonce = ctx.codeword('sh').toLowerCase();
  const shell = await ctx.continueCompleted(handle.id, `Run it [[cal:shell=${shellProbe(`echo ${shellNonce}`)}]]`);
  const sh = shell.turn.tools.find((t) => t.kind === 'shell');
  ctx.check(sh, `the shell call is not on the turn (tools: ${q(JSON.stringify(shell.turn.tools), 120)})`);
  ctx.check(sh.name.includes(`echo ${shellNonce}`), `the shell activity names ${q(sh.name)}, expected the command`);
  ctx.check(outputLines(sh.output).includes(shellNonce), `the shell activity's output is ${q(sh.output)}`);
  const mcpNonce = ctx.codeword('mcp').toLowerCase();
  const mcp = await ctx.continueCompleted(handle.id, `Call it [[cal:mcp=calprobe.echo {"text":"${mcpNonce}"}]]`);
  const call = mcp.turn.tools.find((t) => t.kind === 'mcp');
  ctx.check(call, `the MCP call is not on the turn (tools: ${q(JSON.stringify(mcp.turn.tools), 120)})`);
  ctx.check(call.server === 'calprobe' && call.name === 'echo', `the MCP activity is ${q(`${call.server}.${call.name}`)}, expected calprobe.echo`);
  ctx.check(JSON.stringify(call.input) === JSON.stringify({ text: mcpNonce }), `the MCP activity's input is ${q(JSON.stringify(call.input))}`);
  ctx.check((call.output ?? '').includes(`echo: ${mcpNonce}`), `the MCP activity's output is ${q(call.output)}`);
  const plain = await ctx.continueCompleted(handle.id, 'No tools this time.');
  ctx.check(plain.turn.tools.length === 0, `a turn without tools lists ${plain.turn.tools.length} tool calls (activity leaked from earlier turns)`);
  const stored = await ctx.turns(handle.id);
  ctx.check(stored.find((t) => t.id === shell.turn.id)?.tools.length === shell.turn.tools.length, 'the stored turn record lost its tool activity');
  ctx.note(`shell "echo ${shellNonce}" and MCP calprobe.echo recorded with input and output on their own turns; a plain turn lists none`);
}

export async function failedTurnSettles(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir();
  const code = ctx.codeword('FAIL');
  const { handle } = await ctx.startCompleted(remember(code), { cwd: work.path });
  const events: string[] = [];
  const started = Date.now();
  const failed = await ctx.continue(handle.id, 'This one fails [[cal:http=500]]', { onEvent: (e) => events.push(e.event) }).catch((err: unknown) => {
    throw new CertFailure(`the failing turn raised ${errorText(err)} instead of settling as failed`);
  });
  const took = Date.now() - started;
  ctx.check(failed.turn.status === 'failed', `a scripted HTTP 500 ended the turn ${failed.turn.status}, expected failed`);
  ctx.check(failed.turn.answer === null, `the failed turn has an answer ${q(failed.turn.answer)}: a failure must never look like a successful answer`);
  ctx.check(failed.turn.error && failed.turn.error.message.trim() !== '', 'the failed turn carries no error message from the CLI');
  ctx.check(events.at(-1) === 'failed' && !events.includes('completed'), `events were ${events.join(', ')}`);
  ctx.check(took < ctx.settings.turnTimeoutSeconds * 1000 * 0.8, `the failure took ${secs(took)} to settle (close to the timeout)`);
  const next = await ctx.continueCompleted(handle.id, RECALL);
  expectRecalled(ctx, next.turn, code);
  ctx.note(`HTTP 500 settled as failed in ${secs(took)} with ${q(failed.turn.error.message, 70)}; the next turn recalled`);
}

export async function busyInputPolicy(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir();
  const { handle } = await ctx.startCompleted(remember(ctx.codeword('BUSY')), { cwd: work.path });
  const running = `Slow turn ${ctx.codeword('R')}`;
  const refused = `Second message ${ctx.codeword('X')}`;
  const queued = `Queued message ${ctx.codeword('Q')}`;
  const mark = ctx.model.mark();
  const holder = ctx.continue(handle.id, `${running} [[cal:delay=5000]]`);
  holder.catch(() => undefined);
  await ctx.waitFor('the slow turn to reach the model', () => ctx.model.carrying(running, mark).length > 0, 30_000);
  // Refused: a second message while the turn runs fails with busy at once.
  const t0 = Date.now();
  let kind: string | null = null;
  try {
    await ctx.continue(handle.id, refused);
  } catch (err) {
    kind = errorKind(err);
  }
  const refusedMs = Date.now() - t0;
  ctx.check(kind === 'busy', `a message sent while a turn runs got ${kind ?? 'no error'}, expected busy`);
  ctx.check(refusedMs < 5000, `busy took ${secs(refusedMs)}; it must be immediate`);
  // Queued: with --wait it waits in line and runs as its own turn afterwards.
  const waiter = ctx.continue(handle.id, queued, { waitSeconds: 120 });
  waiter.catch(() => undefined);
  const first = await holder.catch((err: unknown) => {
    throw new CertFailure(`the running turn failed: ${errorText(err)}`);
  });
  const second = await waiter.catch((err: unknown) => {
    throw new CertFailure(`the queued message failed: ${errorText(err)}`);
  });
  ctx.check(first.turn.status === 'completed' && first.turn.answer === `Received: ${running}`, `the running turn ended ${first.turn.status} with ${q(first.turn.answer)}: another message was merged into it?`);
  ctx.check(second.turn.status === 'completed' && second.turn.answer === `Received: ${queued}`, `the queued turn ended ${second.turn.status} with ${q(second.turn.answer)}`);
  const requests = ctx.model.since(mark);
  ctx.check(!requests.some((r) => r.userMessages.some((m) => m.includes(refused))), 'the refused message reached the model');
  const runningReqs = requests.filter((r) => (r.lastUserMessage ?? '').includes(running));
  ctx.check(runningReqs.every((r) => !r.userMessages.some((m) => m.includes(queued))), 'the queued message was merged into the running turn');
  const queuedReq = requests.find((r) => (r.lastUserMessage ?? '') === queued);
  ctx.check(queuedReq, `no request had the queued message as its own last user message (${q(JSON.stringify(requests.map((r) => r.lastUserMessage)), 120)})`);
  ctx.check(queuedReq.seq > Math.max(...runningReqs.map((r) => r.seq)), 'the queued message reached the model before the running turn ended');
  const turns = await ctx.turns(handle.id);
  // A refusal is no turn: it leaves the handle's turn list as it was (issue 41).
  const refusedTurn = turns.find((t) => t.message === refused);
  ctx.check(refusedTurn === undefined, `the refused message left a turn record (${refusedTurn?.status}); a refusal must leave the turn list unchanged`);
  ctx.note(`a message during a running turn: busy in ${secs(refusedMs)}, never sent; with --wait it ran as its own turn after the running one ended`);
}
