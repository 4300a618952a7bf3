import type { EventRecord } from '../../state/store.js';
import { errorText, type ScenarioContext } from '../context.js';
import { CertFailure } from '../types.js';
import { expectRecalled, expectRemembered, outputLines, q, RECALL, remember, sameList, secs, sessionRequests, shellProbe } from './common.js';

/** Launch and context: the CLI starts, in the right place, with what cal hands it. */

export async function freshLaunch(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir();
  const code = ctx.codeword('FRESH');
  const started = Date.now();
  const { handle, turn } = await ctx.startCompleted(remember(code), { cwd: work.path });
  const took = Date.now() - started;
  expectRemembered(ctx, turn, code);
  ctx.check(handle.provider.nativeSessionId, 'the handle has no native session id after the first turn');
  ctx.check(handle.provider.cli?.version === ctx.settings.pinned.version, `the handle pinned version ${handle.provider.cli?.version ?? 'none'}, expected ${ctx.settings.pinned.version}`);
  ctx.check(handle.provider.cli?.realPath === ctx.settings.pinned.realPath, `the handle pinned ${handle.provider.cli?.realPath ?? 'nothing'}, expected ${ctx.settings.pinned.realPath}`);
  const view = await ctx.sessions.describe(handle.id);
  ctx.check(view.panes.length === 1 && view.panes[0]?.launch === 'fresh', `expected one fresh pane, found ${view.panes.map((p) => p.launch).join(', ') || 'none'}`);
  ctx.check(view.currentPaneAlive, 'the pane died after the first turn');
  if (ctx.scripted) {
    const requests = sessionRequests(ctx, handle);
    ctx.check(requests.length === 1, `the model saw ${requests.length} requests for one first message`);
    ctx.check(sameList(requests[0]?.userMessages ?? [], [remember(code)]), `the model saw user messages ${q(JSON.stringify(requests[0]?.userMessages), 120)}, expected only the first message`);
    ctx.note('model saw 1 user message (a fresh session)');
  }
  ctx.note(`first answer in ${secs(took)}; native id …${handle.provider.nativeSessionId.slice(-8)}; pane alive`);
}

export async function startupDialogsPreAnswered(ctx: ScenarioContext): Promise<void> {
  // A folder the CLI has never seen: a fresh git repository, reached through a symlink. Trust,
  // onboarding and similar dialogs would hold the first message back until someone answers.
  const work = await ctx.workDir({ git: true, viaSymlink: true });
  const code = ctx.codeword('DIALOG');
  const events: EventRecord[] = [];
  const started = Date.now();
  let recordedAt = 0;
  const { handle, turn } = await ctx.startCompleted(remember(code), {
    cwd: work.path,
    timeoutSeconds: Math.min(ctx.settings.turnTimeoutSeconds, 45),
    onEvent: (e) => {
      events.push(e);
      if (e.event === 'running' && !recordedAt) recordedAt = Date.now();
    },
  });
  expectRemembered(ctx, turn, code);
  ctx.check(recordedAt > 0, 'the CLI never recorded the first message (no running event)');
  ctx.check(events.map((e) => e.event).join(',') === 'running,completed', `events were ${events.map((e) => e.event).join(', ')}`);
  if (ctx.scripted) {
    const requests = sessionRequests(ctx, handle);
    ctx.check(requests.length === 1 && sameList(requests[0]?.userMessages ?? [], [remember(code)]), `the model saw ${requests.length} requests (${q(JSON.stringify(requests.map((r) => r.userMessages)), 120)}), expected the first message once`);
  }
  // The same holds the second time, in another never-seen folder right after the first.
  const again = await ctx.workDir({ git: true });
  const second = await ctx.startCompleted(RECALL, { cwd: again.path, timeoutSeconds: Math.min(ctx.settings.turnTimeoutSeconds, 45) });
  ctx.check(second.turn.answer !== null, 'the second fresh folder gave no answer');
  ctx.note(`fresh git repository via symlink: message recorded ${secs(recordedAt - started)} after launch, no keystroke sent; a second new folder too`);
}

export async function workingDirectory(ctx: ScenarioContext): Promise<void> {
  const work = await ctx.workDir({ viaSymlink: true });
  const { handle, turn } = await ctx.startCompleted(`Print the working directory [[cal:shell=${shellProbe('pwd')}]]`, { cwd: work.path });
  ctx.check(handle.config.workingDir.realPath === work.realPath, `the handle records ${handle.config.workingDir.realPath}, expected ${work.realPath}`);
  const shell = turn.tools.find((t) => t.kind === 'shell');
  ctx.check(shell, `the turn recorded no shell tool call (tools: ${q(JSON.stringify(turn.tools), 120)})`);
  const lines = outputLines(shell.output);
  // The answer is the model's reply to the tool result the CLI sent it: with it in the message, a
  // failure tells an output the CLI lost from one cal read wrong or too early.
  ctx.check(lines.includes(work.realPath), `pwd in the CLI's shell tool printed ${q(lines.join(' | '), 120)}, expected ${work.realPath} (the model then answered ${q(turn.answer, 160)})`);
  ctx.check(turn.answer === `Tool finished: ${work.realPath}`, `the answer was ${q(turn.answer)}, expected the tool's result`);
  ctx.note(`the shell tool ran in ${work.realPath} (asked for ${work.path})`);
}

export async function runtimeContext(ctx: ScenarioContext): Promise<void> {
  const recorded = await ctx.recordingEnv();
  const work = await ctx.workDir();
  const probe = await ctx.mcpProbe(work);
  const marker = ctx.codeword('SYSPROMPT');
  const text = ctx.codeword('MCP');
  const systemPrompt = `You are being certified by cal. Certification marker: ${marker}.`;
  const { turn } = await ctx.startCompleted(`Call the probe [[cal:mcp=calprobe.echo {"text":"${text}"}]]`, {
    cwd: work.path,
    systemPrompt,
    mcpConfig: probe.config,
    env: recorded.env,
  });
  const bodies = recorded.bodies();
  ctx.check(bodies.length > 0, 'no request went through the recording proxy');
  ctx.check(bodies.some((b) => b.includes(marker)), `the system prompt marker ${marker} is in none of the ${bodies.length} model requests: the system prompt did not reach the CLI`);
  const methods = (await probe.requests()).map((r) => r.method);
  ctx.check(methods.includes('initialize') && methods.includes('tools/list'), `the MCP server from --mcp-config saw ${q(methods.join(', ') || 'no request')}: the CLI did not start it and list its tools`);
  const calls = await probe.calls();
  ctx.check(calls.some((c) => c.name === 'echo' && JSON.stringify(c.arguments) === JSON.stringify({ text })), `the MCP server from --mcp-config logged ${calls.length} calls (${q(JSON.stringify(calls), 100)}), expected echo {"text":"${text}"}`);
  const mcp = turn.tools.find((t) => t.kind === 'mcp');
  ctx.check(mcp && mcp.name === 'echo' && mcp.server === 'calprobe', `the turn's tools were ${q(JSON.stringify(turn.tools), 120)}, expected an MCP call calprobe.echo`);
  ctx.check(turn.answer === `Tool finished: echo: ${text}`, `the answer was ${q(turn.answer)}`);
  ctx.note(`system prompt seen in the model request; MCP server from --mcp-config called once with ${text}`);
}

export async function resumeStartupPrompts(ctx: ScenarioContext): Promise<void> {
  // Resume where prompts are likeliest: an untrusted git repository reached through a symlink,
  // with an MCP server configured, resumed twice in a row (a resumed session resumed again).
  const work = await ctx.workDir({ git: true, viaSymlink: true });
  const probe = await ctx.mcpProbe();
  const code = ctx.codeword('RESUMEPROMPT');
  const { handle } = await ctx.startCompleted(remember(code), { cwd: work.path, mcpConfig: probe.config });
  const lines: string[] = [];
  for (const round of [1, 2]) {
    await ctx.sessions.killTmux(handle.id);
    const message = `${RECALL} (resume ${round})`;
    const mark = ctx.scripted ? ctx.model.mark() : 0;
    const events: string[] = [];
    const started = Date.now();
    let recordedAt = 0;
    const run = await ctx
      .continue(handle.id, message, {
        timeoutSeconds: Math.min(ctx.settings.turnTimeoutSeconds, 45),
        onEvent: (e) => {
          events.push(e.event);
          if (e.event === 'running' && !recordedAt) recordedAt = Date.now();
        },
      })
      .catch((err: unknown) => {
        throw new CertFailure(`resume ${round} failed: ${errorText(err)}`);
      });
    ctx.check(run.turn.status === 'completed', `resume ${round} ended ${run.turn.status}${run.turn.error ? `: ${run.turn.error.message}` : ''}`);
    ctx.check(events.includes('resuming'), `resume ${round} did not relaunch with native resume (events: ${events.join(', ')})`);
    expectRecalled(ctx, run.turn, code);
    if (ctx.scripted) {
      const carrying = ctx.model.since(mark).filter((r) => r.lastUserMessage === message);
      ctx.check(carrying.length === 1, `resume ${round}: the model saw the new message as the last user message in ${carrying.length} requests, expected 1`);
    }
    lines.push(`resume ${round} recorded ${secs(recordedAt - started)} after relaunch`);
  }
  ctx.note(`${lines.join('; ')}; git repo via symlink with an MCP server, no keystroke sent`);
}
