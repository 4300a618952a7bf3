import { spawn } from 'node:child_process';
import { realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelServer } from '../../src/model/server.js';
import { interruptedCal } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { calBin } from '../support/clis.js';
import { processExists, until } from '../support/structured-fakes.js';

/**
 * Issue 15 acceptance for Claude Code's structured transport, when cal itself is killed or
 * interrupted mid-turn: `cal recover` settles or delivers the turn and never sends it twice; a
 * Ctrl-C interrupts it; a conversation Claude lost is resume_unavailable. The real pinned `claude`
 * in print mode against the scripted model, on one session started before the tests (the
 * transport's other promises: structured-claude.test.ts).
 */
const TIMEOUT = ['--timeout', '90'];

describe('Claude Code with --transport structured, when cal is killed or interrupted', () => {
  let suite: CliSuite;
  let server: ModelServer;
  let work: string;
  let handle = '';

  const cal = (args: string[]) => suite.cal(args);
  const inspect = async (h = handle) => (await cal(['inspect', h, '--json'])).json;
  const userMessagesOfLastTurn = () => server.turnRequests().at(-1)?.userMessages ?? [];

  beforeAll(async () => {
    suite = await cliSuite('claude-code', { prefix: 'structured-claude-recover' });
    server = suite.server;
    work = realpathSync(suite.work);
    const start = await cal(['start', '--provider', 'claude-code', '--transport', 'structured', '--cwd', work, '--json', ...TIMEOUT, 'Remember the codeword QUINCE.']);
    expect(start.code, start.stderr).toBe(0);
    handle = start.json.handle;
  });

  afterAll(async () => {
    await suite?.close();
  });

  /** Spawns cal, waits until the model got `message`, then kills cal with SIGKILL (its claude -p lives on). */
  async function killCalOnceSent(args: string[], message: string): Promise<void> {
    const child = spawn(process.execPath, [calBin, '--state-dir', suite.state, ...args], { env: suite.env, stdio: 'ignore' });
    await until(() => server.turnRequests().some((r) => r.lastUserMessage === message), 'the model to get the message');
    child.kill('SIGKILL');
    if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.on('exit', r));
  }

  /** The orphaned claude -p has finished the turn: its cost-state follows the message in the transcript. */
  async function transcriptEnded(file: string, message: string): Promise<boolean> {
    const records = (await fs.readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean).map((l) => JSON.parse(l));
    // A prompt given as text is stored as a string, one given as a stream-json line as text blocks.
    const textOf = (content: unknown) => (Array.isArray(content) ? content.map((b: { text?: string }) => b.text ?? '').join('') : content);
    const at = records.findIndex((r) => r.type === 'user' && textOf(r.message?.content) === message);
    return at !== -1 && records.slice(at).some((r) => r.type === 'cost-state');
  }

  it('cal killed mid-turn: once the CLI finished, cal recover settles the turn from the transcript and sends nothing', async () => {
    const message = 'Recover me [[cal:delay=2500]]';
    server.clearLog();
    await killCalOnceSent(['continue', handle, ...TIMEOUT, message], message);
    const file = (await inspect()).provider.transcript.path as string;
    await until(() => transcriptEnded(file, message), 'the orphaned claude -p to end the turn');
    const rec = await cal(['recover', '--json']);
    expect(rec.code, rec.stdout + rec.stderr).toBe(0);
    expect(rec.json.turns).toEqual([expect.objectContaining({ handle, before: 'running', action: 'settled_from_transcript', status: 'completed', answer: 'Received: Recover me' })]);
    expect(server.turnRequests().filter((r) => r.lastUserMessage === message)).toHaveLength(1);
    // The session goes on with the recovered turn in its history, once.
    const next = await cal(['continue', handle, '--json', ...TIMEOUT, 'What was the codeword, after recover?']);
    expect(next.code, next.stderr).toBe(0);
    expect(userMessagesOfLastTurn().filter((m) => m === message)).toHaveLength(1);
  });

  // The handle records claude -p's pid and start time at its launch: recover tells it still works.
  it('cal killed mid-turn while the CLI still works: cal recover waits for it and sends nothing', async () => {
    const message = 'Recover me slowly [[cal:delay=6000]]';
    server.clearLog();
    await killCalOnceSent(['continue', handle, ...TIMEOUT, message], message);
    const rec = await cal(['recover', '--json']);
    expect(rec.code, rec.stdout + rec.stderr).toBe(0);
    expect(rec.json.turns).toEqual([expect.objectContaining({ handle, action: 'waited_for_cli', status: 'completed', answer: 'Received: Recover me slowly' })]);
    expect(server.turnRequests().filter((r) => r.lastUserMessage === message)).toHaveLength(1);
  });

  // The id chosen up front is on the handle before the launch: recover finds the transcript by it.
  it('cal killed during the first turn: cal recover settles it from the transcript, never a second send', async () => {
    const message = 'Remember the codeword FIRSTKILL. [[cal:delay=2500]]';
    const name = 'structured-first-kill';
    server.clearLog();
    await killCalOnceSent(['start', '--provider', 'claude-code', '--transport', 'structured', '--cwd', work, '--name', name, ...TIMEOUT, message], message);
    const pending = (await inspect(name)).provider.pendingSessionId as string;
    const file = path.join(suite.env.HOME!, '.claude', 'projects', work.replace(/[^A-Za-z0-9]/g, '-'), `${pending}.jsonl`);
    await until(() => transcriptEnded(file, message), 'the orphaned claude -p to end the turn');
    const rec = await cal(['recover', '--json']);
    expect(rec.code, rec.stdout + rec.stderr).toBe(0);
    expect(rec.json.turns).toEqual([expect.objectContaining({ action: 'settled_from_transcript', status: 'completed', answer: 'OK, I will remember the codeword FIRSTKILL.' })]);
    expect(server.turnRequests().filter((r) => r.lastUserMessage === message)).toHaveLength(1);
    expect((await inspect(name)).provider.nativeSessionId).toBe(pending);
  });

  /** The claude processes whose parent is `ppid` and whose argv resumes session `id` (from /proc). */
  async function claudeChildren(ppid: number, id: string): Promise<number[]> {
    const pids: number[] = [];
    for (const entry of await fs.readdir('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const stat = await fs.readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent !== ppid) continue;
      const argv = (await fs.readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).split('\0');
      if (argv.includes('-p') && argv[argv.indexOf('--resume') + 1] === id) pids.push(Number(entry));
    }
    return pids;
  }

  // A resumed turn's claude -p is started ahead of the turn's records, so that they cost no time;
  // its message goes in only once they are on disk. A cal killed before that leaves it no input.
  it('cal killed before the send: the claude -p it started ahead gets no message and ends; recover delivers the turn once', async () => {
    const message = 'What was the codeword? (cal killed before the send)';
    const id = (await inspect()).provider.nativeSessionId as string;
    server.clearLog();
    const child = spawn(process.execPath, [calBin, '--state-dir', suite.state, 'continue', handle, ...TIMEOUT, message], {
      env: { ...suite.env, CAL_FAULT: 'before-send' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    await until(() => stderr.includes('paused at fault point before-send'), 'the fault point');
    const early = await claudeChildren(child.pid as number, id);
    expect(early, 'the claude -p started ahead of the send').toHaveLength(1);
    const exited = new Promise((r) => child.on('exit', r));
    child.kill('SIGKILL');
    await exited;
    await until(() => !processExists(early[0] as number), 'the claude -p started ahead to end on its empty stdin');
    expect(server.turnRequests()).toEqual([]);
    const rec = await cal(['recover', '--json']);
    expect(rec.code, rec.stdout + rec.stderr).toBe(0);
    expect(rec.json.turns).toEqual([expect.objectContaining({ handle, before: 'sending', action: 'delivered', status: 'completed', answer: 'The codeword was QUINCE.' })]);
    expect(server.turnRequests().filter((r) => r.lastUserMessage === message)).toHaveLength(1);
  });

  /** `cal continue` of a slow message, interrupted once the model has it: by `signal` to cal alone, or to its whole process group (a Ctrl-C at a terminal, which claude -p gets too). */
  it('Ctrl-C during a turn, at a terminal (cal and claude -p both get SIGINT) or to cal alone (its cancel): the turn is interrupted (11), sent once, and the session goes on', async () => {
    for (const group of [true, false]) {
      const message = `Interrupt me ${group ? 'at the terminal' : 'through cal'} [[cal:delay=8000]]`;
      server.clearLog();
      const run = await interruptedCal(suite.state, ['continue', handle, '--json', ...TIMEOUT, message], suite.env, { group, running: async () => server.turnRequests().some((r) => r.lastUserMessage === message) });
      expect(run.code, run.stdout).toBe(11);
      expect(JSON.parse(run.stdout).turn).toMatchObject({ status: 'interrupted', answer: null });
      // Cancelled, not waited out: the scripted model would answer after 8 s.
      expect(run.ms).toBeLessThan(7000);
      expect(server.turnRequests().filter((r) => r.lastUserMessage === message)).toHaveLength(1);
    }
    const next = await cal(['continue', handle, '--json', ...TIMEOUT, 'What was the codeword, after the interrupts?']);
    expect(next.code, next.stderr).toBe(0);
    expect(next.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was QUINCE.' });
  });

  it('when Claude no longer has the conversation, continue is resume_unavailable (9) with its own words', async () => {
    const view = await inspect();
    const projects = path.join(suite.env.HOME!, '.claude', 'projects');
    await fs.rename(projects, `${projects}-moved`);
    try {
      server.clearLog();
      const run = await cal(['continue', handle, '--json', ...TIMEOUT, 'Are you there?']);
      expect(run.code).toBe(9);
      expect(run.json.error.kind).toBe('resume_unavailable');
      expect(run.json.error.message).toContain(`No conversation found with session ID: ${view.provider.nativeSessionId}`);
      expect(server.turnRequests()).toEqual([]);
      // Never a silent fresh start: the handle still names the old session.
      expect((await inspect()).provider.nativeSessionId).toBe(view.provider.nativeSessionId);
    } finally {
      await fs.rename(`${projects}-moved`, projects);
    }
  });
});
