import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsOf, handleFromStderr } from '../support/cal.js';
import { cliSuite, type CliSuite, freshGitRepo } from '../support/cli-suite.js';
import { pinnedCli } from '../support/clis.js';
import { listRollouts, readRollout } from '../support/codex-home.js';
import { TIMEOUT } from '../support/shared-scenarios.js';
import { busyWhileStructuredTurnRuns, chainedStructuredTurns } from '../support/structured-busy.js';
import { until } from '../support/structured-fakes.js';
import { lastCliExited, traceMarks, unusedReasons } from '../support/early-start.js';

/**
 * Issue 4 acceptance, the structured transport: the real pinned Codex binary (0.169.0) through
 * `codex exec --json` and `codex exec resume`, against the scripted model, driven through the
 * built `cal` as a black box. The tests build on each other (one logical session), so they run in
 * order, with their own HOME, CODEX_HOME and state directory. (The tmux transport: codex.test.ts.)
 */
describe('Codex with --transport structured, end to end', () => {
  let s: CliSuite;
  let work: string;
  let handle = '';

  const cal = (args: string[]) => s.cal(args);
  const inspect = () => s.inspect(handle);

  beforeAll(async () => {
    s = await cliSuite('codex', { prefix: 'codex-structured' });
    work = await freshGitRepo(path.join(s.root, 'repo'));
  });

  afterAll(async () => {
    await s?.close();
  });

  it('start remembers through codex exec --json; the handle has the thread id and its rollout, no pane', async () => {
    const run = await cal(['start', '--provider', 'codex', '--transport', 'structured', '--cwd', work, ...TIMEOUT, 'Remember the codeword PEAR.']);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe('OK, I will remember the codeword PEAR.');
    handle = handleFromStderr(run.stderr) ?? '';
    const view = await inspect();
    expect(view.provider.transport).toBe('structured');
    expect(view.provider.nativeSessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(view.provider.tmux).toBeNull();
    expect(view.panes).toEqual([]);
    expect(view.provider.cli.realPath).toMatch(/vendor\/[^/]+\/bin\/codex$/);
    expect(path.basename(view.provider.transcript.path)).toContain(view.provider.nativeSessionId);
    const rollout = await readRollout(view.provider.transcript.path);
    expect(rollout[0].payload).toMatchObject({ originator: 'codex_exec', cwd: work, cli_version: pinnedCli.codex.version });
  });

  it('continue resumes with codex exec resume and recalls, in the codex exec cal\'s entry started before its modules loaded', async () => {
    await lastCliExited(inspect);
    const trace = path.join(s.root, 'first-continue-trace');
    const run = await s.cal(['continue', handle, '--json', '--events', ...TIMEOUT, 'What was the codeword?'], { env: { CAL_TRACE_TIMING: trace } });
    expect(run.code).toBe(0);
    expect(run.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was PEAR.' });
    expect(eventsOf(run)).toEqual(['resuming', 'running', 'completed']);
    // One codex of the turn, the early one (src/sessions/early-start.ts): Codex's preparation
    // writes nothing, so the CLI started before it is kept.
    const { lines, marks } = await traceMarks(trace);
    expect(marks.filter((m) => m === 'structured-spawned'), unusedReasons(lines)).toHaveLength(1);
    expect(marks.indexOf('structured-spawned')).toBeLessThan(marks.indexOf('main'));
  });

  it('kill-tmux has no pane to kill (non_applicable, as for an API session); continue still resumes with only the new message on the same rollout', async () => {
    const before = await inspect();
    const kill = await cal(['kill-tmux', handle, '--json']);
    expect(kill.code).toBe(8);
    expect(kill.json.error.kind).toBe('non_applicable');
    s.server.clearLog();
    const run = await cal(['continue', handle, '--json', ...TIMEOUT, 'What was the codeword, again?']);
    expect(run.code).toBe(0);
    expect(run.json.turn.answer).toBe('The codeword was PEAR.');
    const after = await inspect();
    expect(after.provider.nativeSessionId).toBe(before.provider.nativeSessionId);
    expect(after.provider.transcript.path).toBe(before.provider.transcript.path);
    expect(await listRollouts(s.configDir)).toEqual([after.provider.transcript.path]);
    expect((await readRollout(after.provider.transcript.path)).filter((r) => r.type === 'session_meta')).toHaveLength(1);
    const turns = s.server.turnRequests();
    expect(turns).toHaveLength(1);
    expect(turns[0]!.userMessages).toEqual(['Remember the codeword PEAR.', 'What was the codeword?', 'What was the codeword, again?']);
  });

  it('tool activity and a scripted HTTP 500 come from the event stream', async () => {
    const shell = await cal(['continue', handle, '--json', ...TIMEOUT, 'Run it [[cal:shell=echo hello-from-exec]]']);
    expect(shell.code).toBe(0);
    expect(shell.json.turn.answer).toBe('Tool finished: hello-from-exec');
    expect(shell.json.turn.tools).toEqual([{ kind: 'shell', name: 'echo hello-from-exec', output: 'hello-from-exec\n', status: 'completed' }]);
    const failed = await cal(['continue', handle, '--json', ...TIMEOUT, 'This one fails [[cal:http=500]]']);
    expect(failed.code).toBe(10);
    expect(failed.json.turn).toMatchObject({ status: 'failed', answer: null });
    expect(failed.json.error.message).toContain('We’re currently experiencing high demand');
  });

  it('turns chained back to back (each cal returns on turn.completed, its codex exec may still be finishing): every resume carries each earlier turn once and one new message', async () => {
    await chainedStructuredTurns({ cal, inspect, server: s.server, handle, timeout: TIMEOUT }, 'codex exec');
  });

  it('a continue while a structured turn runs: busy (5) at once, never sent; with --wait it waits in line and runs as its own turn', async () => {
    await busyWhileStructuredTurnRuns({ cal, inspect, server: s.server, handle, codeword: 'PEAR', timeout: TIMEOUT });
  });

  it('cal killed mid-turn: once codex finished, cal recover settles the turn from the rollout and sends nothing', async () => {
    const message = 'Recover me [[cal:delay=2500]]';
    s.server.clearLog();
    const bg = s.spawnCal(['continue', handle, ...TIMEOUT, message]);
    await until(async () => s.server.turnRequests().some((r) => r.lastUserMessage === message), 'the model to get the message');
    bg.child.kill('SIGKILL');
    await bg.done;
    const rollout = (await inspect()).provider.transcript.path as string;
    // The orphaned codex exec ends the turn in its rollout.
    await until(async () => JSON.stringify(await readRollout(rollout)).includes('Received: Recover me'), 'codex to end the turn');
    const rec = await cal(['recover', '--json']);
    expect(rec.code, rec.stdout + rec.stderr).toBe(0);
    expect(rec.json.turns).toEqual([expect.objectContaining({ handle, before: 'running', action: 'settled_from_transcript', status: 'completed', answer: 'Received: Recover me' })]);
    expect(s.server.turnRequests().filter((r) => r.lastUserMessage === message)).toHaveLength(1);
  });

  it('cal killed mid-turn while codex still works: cal recover waits for it and sends nothing', async () => {
    const message = 'Recover me slowly [[cal:delay=6000]]';
    s.server.clearLog();
    const bg = s.spawnCal(['continue', handle, ...TIMEOUT, message]);
    await until(async () => s.server.turnRequests().some((r) => r.lastUserMessage === message), 'the model to get the message');
    bg.child.kill('SIGKILL');
    await bg.done;
    const rec = await cal(['recover', '--json']);
    expect(rec.code, rec.stdout + rec.stderr).toBe(0);
    expect(rec.json.turns).toEqual([expect.objectContaining({ handle, before: 'running', action: 'waited_for_cli', status: 'completed', answer: 'Received: Recover me slowly' })]);
    expect(s.server.turnRequests().filter((r) => r.lastUserMessage === message)).toHaveLength(1);
    expect((await inspect()).provider.cliProcess ?? null).toBeNull();
    const next = await cal(['continue', handle, '--json', ...TIMEOUT, 'What was the codeword?']);
    expect(next.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was PEAR.' });
  });

  // codex exec picks its thread id itself: recover finds the rollout by the message it carries.
  it('cal killed during the first turn: cal recover settles it from the rollout, never a second send', async () => {
    const message = 'Remember the codeword CXFIRSTKILL. [[cal:delay=2500]]';
    s.server.clearLog();
    const bg = s.spawnCal(['start', '--provider', 'codex', '--transport', 'structured', '--cwd', work, '--name', 'codex-first-kill', ...TIMEOUT, message]);
    await until(async () => s.server.turnRequests().some((r) => r.lastUserMessage === message), 'the model to get the message');
    bg.child.kill('SIGKILL');
    await bg.done;
    await until(async () => {
      for (const file of await listRollouts(s.configDir)) {
        const text = JSON.stringify(await readRollout(file));
        if (text.includes('CXFIRSTKILL') && text.includes('OK, I will remember the codeword CXFIRSTKILL.')) return true;
      }
      return false;
    }, 'codex to end the turn');
    const rec = await cal(['recover', '--json']);
    expect(rec.code, rec.stdout + rec.stderr).toBe(0);
    expect(rec.json.turns).toEqual([expect.objectContaining({ before: 'running', action: 'settled_from_transcript', status: 'completed', answer: 'OK, I will remember the codeword CXFIRSTKILL.' })]);
    expect(s.server.turnRequests().filter((r) => r.lastUserMessage === message)).toHaveLength(1);
    const next = await cal(['continue', 'codex-first-kill', '--json', ...TIMEOUT, 'What was the codeword?']);
    expect(next.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was CXFIRSTKILL.' });
  });

  it('Ctrl-C during a turn, at a terminal (cal and codex both get SIGINT) or to cal alone (its cancel): the turn is interrupted (11), sent once, and the session goes on', async () => {
    for (const group of [true, false]) {
      const message = `Interrupt me ${group ? 'at the terminal' : 'through cal'} [[cal:delay=8000]]`;
      s.server.clearLog();
      // spawnCal gives cal a process group of its own, as a terminal's foreground job has.
      const bg = s.spawnCal(['continue', handle, '--json', ...TIMEOUT, message]);
      await until(async () => s.server.turnRequests().some((r) => r.lastUserMessage === message), 'the model to get the message');
      if (group) process.kill(-(bg.child.pid as number), 'SIGINT');
      else bg.child.kill('SIGINT');
      const run = await bg.done;
      expect(run.code, run.stdout + run.stderr).toBe(11);
      expect(JSON.parse(run.stdout).turn).toMatchObject({ status: 'interrupted', answer: null });
      expect(s.server.turnRequests().filter((r) => r.lastUserMessage === message)).toHaveLength(1);
    }
    const next = await cal(['continue', handle, '--json', ...TIMEOUT, 'What was the codeword, after the interrupts?']);
    expect(next.code, next.stderr).toBe(0);
    expect(next.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was PEAR.' });
  });

  it('when the pinned binary is gone, continue is cli_missing (13) naming the pinned version', async (ctx) => {
    const view = await inspect();
    const copy = path.join(s.root, 'pinned', 'codex');
    await fs.mkdir(path.dirname(copy), { recursive: true });
    try {
      await fs.link(view.provider.cli.realPath, copy); // a hard link: no 300 MB copy
    } catch {
      ctx.skip();
    }
    const start = await cal(['start', '--provider', 'codex', '--transport', 'structured', '--cwd', work, '--cli-path', copy, ...TIMEOUT, 'Remember the codeword LIME.']);
    expect(start.code).toBe(0);
    const other = handleFromStderr(start.stderr) ?? '';
    expect((await cal(['inspect', other, '--json'])).json.provider.cli).toMatchObject({ realPath: copy, version: pinnedCli.codex.version });
    await fs.rm(copy);
    const run = await cal(['continue', other, '--json', ...TIMEOUT, 'What was the codeword?']);
    expect(run.code).toBe(13);
    expect(run.json.error.kind).toBe('cli_missing');
    expect(run.json.error.message).toContain(pinnedCli.codex.version);
  });

  it('codex exec refusing the resume (rollout gone) is resume_unavailable (9) with its own words', async () => {
    await fs.rename(path.join(s.configDir, 'sessions'), path.join(s.configDir, 'sessions-moved'));
    const run = await cal(['continue', handle, '--json', ...TIMEOUT, 'Are you there?']);
    expect(run.code).toBe(9);
    expect(run.json.error.kind).toBe('resume_unavailable');
    expect(run.json.error.message).toMatch(/no rollout found for thread id/);
    expect(run.json.error.message).not.toMatch(/<unknown>/);
  });
});
