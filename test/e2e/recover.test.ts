import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelServer } from '../../src/model/server.js';
import { handleFromStderr, type CalRun } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { calBin } from '../support/clis.js';

/**
 * Issue 6 acceptance (turns): cal killed with SIGKILL at each point of a turn, then
 * `cal recover` settles the turn from the transcript first; the model sees each message once.
 */
describe('durable turns and cal recover', () => {
  let suite: CliSuite;
  let server: ModelServer;
  let root: string;
  let state: string;
  let env: Record<string, string>;

  const cal = (args: string[]): Promise<CalRun> => suite.cal(args);
  const timesSeen = (message: string) => server.turnRequests().filter((r) => r.lastUserMessage?.includes(message)).length;
  const spawnCal = (args: string[], extraEnv: Record<string, string> = {}) => suite.spawnCal(args, { env: extraEnv });

  async function kill9(child: ChildProcess): Promise<void> {
    child.kill('SIGKILL');
    if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.on('exit', r));
  }

  async function until(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
    for (let i = 0; i < 300; i++) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  async function lastTurn(h: string): Promise<any> {
    const dir = path.join(state, 'turns', h);
    // Only finished records: an atomic write's temporary file sorts after its target.
    const files = (await fs.readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.json')).sort();
    if (!files.length) return null;
    try {
      return JSON.parse(await fs.readFile(path.join(dir, files.at(-1)!), 'utf8'));
    } catch {
      return null;
    }
  }

  async function startSession(codeword: string): Promise<string> {
    const work = await suite.workDir(`w-${codeword}`);
    const run = await cal(['start', '--provider', 'claude-code', '--cwd', work, `Remember the codeword ${codeword}.`]);
    expect(run.code, run.stderr).toBe(0);
    return handleFromStderr(run.stderr)!;
  }

  beforeAll(async () => {
    suite = await cliSuite('claude-code', { prefix: 'recover' });
    ({ server, root, state, env } = suite);
  });

  afterAll(async () => {
    await suite?.close();
  });

  it('killed before the paste: recover delivers the message once', async () => {
    const h = await startSession('ALPHA');
    const message = 'What was the codeword? (killed before send)';
    const run = spawnCal(['continue', h, message], { CAL_FAULT: 'before-send' });
    await until(() => run.stderr().includes('paused at fault point before-send'), 'the fault point');
    await kill9(run.child);
    expect((await lastTurn(h)).status).toBe('sending');

    const rec = await cal(['recover', '--json']);
    expect(rec.code, rec.stdout + rec.stderr).toBe(0);
    const item = rec.json.turns.find((t: any) => t.handle === h);
    expect(item).toMatchObject({ before: 'sending', action: 'delivered', status: 'completed', answer: 'The codeword was ALPHA.' });
    expect(timesSeen(message)).toBe(1);
  });

  // The model's 8 s delay keeps the CLI busy through the kill, the dry run and recover's start on a
  // loaded machine (at 2.5 s a loaded CI saw the turn already in the transcript: settled, not waited).
  it('killed after the paste, before the end of the turn: recover waits for the CLI, sends nothing', async () => {
    const h = await startSession('BRAVO');
    const message = 'What was the codeword? [[cal:delay=8000]]';
    const run = spawnCal(['continue', h, message]);
    await until(async () => (await lastTurn(h))?.status === 'running', 'the turn to run');
    await kill9(run.child);

    const dry = await cal(['recover', '--dry-run', '--json']);
    expect(dry.json.turns.find((t: any) => t.handle === h)).toMatchObject({ action: 'waited_for_cli', status: 'running' });
    const rec = await cal(['recover', '--json']);
    expect(rec.code, rec.stdout + rec.stderr).toBe(0);
    expect(rec.json.turns.find((t: any) => t.handle === h)).toMatchObject({ before: 'running', action: 'waited_for_cli', status: 'completed', answer: 'The codeword was BRAVO.' });
    expect(timesSeen('What was the codeword? [[cal:delay=8000]]')).toBe(1);
    // Already settled: a second recover finds nothing to do.
    const again = await cal(['recover', '--json']);
    expect(again.json.turns.filter((t: any) => t.handle === h)).toEqual([]);
  });

  it('on a terminal, recover shows a spinner while it waits for the CLI', async () => {
    const h = await startSession('HOTEL');
    const run = spawnCal(['continue', h, 'What was the codeword? [[cal:delay=3000]]']);
    await until(async () => (await lastTurn(h))?.status === 'running', 'the turn to run');
    await kill9(run.child);
    const socket = path.join(root, 'spinner-tmux.sock');
    const done = path.join(root, 'spinner-done');
    const command = `node ${calBin} --state-dir ${state} recover; echo $? > ${done}; sleep 60`;
    const { execa } = await import('execa');
    await execa('tmux', ['-S', socket, 'new-session', '-d', '-x', '160', '-y', '20', command], { env: { ...env, TERM: 'xterm-256color' } });
    try {
      let sawSpinner = false;
      for (let i = 0; i < 400 && !(await fs.stat(done).catch(() => null)); i++) {
        if (/(recovering|running) · \d+s/.test((await execa('tmux', ['-S', socket, 'capture-pane', '-p'])).stdout)) sawSpinner = true;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect((await fs.readFile(done, 'utf8')).trim()).toBe('0');
      expect(sawSpinner).toBe(true);
      const screen = (await execa('tmux', ['-S', socket, 'capture-pane', '-p'])).stdout;
      expect(screen).toMatch(/running -> waited_for_cli -> completed\s+The codeword was HOTEL\./);
    } finally {
      await execa('tmux', ['-S', socket, 'kill-server'], { reject: false });
    }
  });

  it('a turn the transcript shows completed is settled from it, with its answer', async () => {
    const h = await startSession('CHARLIE');
    const message = 'What was the codeword? [[cal:delay=800]]';
    const run = spawnCal(['continue', h, message]);
    await until(async () => (await lastTurn(h))?.status === 'running', 'the turn to run');
    await kill9(run.child);
    await new Promise((r) => setTimeout(r, 2500)); // the CLI finishes the turn on its own
    const rec = await cal(['recover', '--json']);
    expect(rec.json.turns.find((t: any) => t.handle === h)).toMatchObject({ action: 'settled_from_transcript', status: 'completed', answer: 'The codeword was CHARLIE.' });
    expect(timesSeen(message)).toBe(1);
    // The stored offset moved past that turn: the next continue reports only its own turn.
    const next = await cal(['continue', h, 'Say the codeword once more.']);
    expect(next.code).toBe(0);
  });

  it('killed while waiting for the lock: recover delivers the message once the lock frees', async () => {
    const h = await startSession('DELTA');
    const holder = cal(['continue', h, 'Slow holder [[cal:delay=8000]]']);
    await until(async () => (await lastTurn(h))?.status === 'running', 'the holder to run');
    const message = 'What was the codeword? (killed while waiting)';
    const waiter = spawnCal(['continue', h, '--wait', message]);
    await until(async () => (await lastTurn(h))?.status === 'waiting_for_lock', 'the waiter to wait');
    await kill9(waiter.child);
    expect((await holder).code).toBe(0);
    const rec = await cal(['recover', '--json']);
    expect(rec.json.turns.find((t: any) => t.handle === h)).toMatchObject({ before: 'waiting_for_lock', action: 'delivered', status: 'completed', answer: 'The codeword was DELTA.' });
    expect(timesSeen(message)).toBe(1);
  });

  it('a start killed before its launch is delivered by recover as a fresh session', async () => {
    const work = await suite.workDir('w-echo');
    const run = spawnCal(['start', '--provider', 'claude-code', '--cwd', work, 'Remember the codeword ECHO.'], { CAL_FAULT: 'before-send' });
    await until(() => run.stderr().includes('paused at fault point'), 'the fault point');
    await kill9(run.child);
    const rec = await cal(['recover', '--json']);
    const item = rec.json.turns.find((t: any) => t.message === 'Remember the codeword ECHO.');
    expect(item).toMatchObject({ action: 'delivered', status: 'completed' });
    const recall = await cal(['continue', item.handle, 'What was the codeword?']);
    expect(recall.stdout.trim()).toBe('The codeword was ECHO.');
  });

  it('a turn whose pane died with its cal is lost; --retry-lost sends it again through native resume', async () => {
    const h = await startSession('GOLF');
    const message = 'What was the codeword? [[cal:delay=4000]]';
    const run = spawnCal(['continue', h, message]);
    await until(async () => (await lastTurn(h))?.status === 'running', 'the turn to run');
    await kill9(run.child);
    await cal(['kill-tmux', h]);
    const dry = await cal(['recover', '--dry-run', '--json']);
    expect(dry.json.turns.find((t: any) => t.handle === h)).toMatchObject({ action: 'marked_lost' });
    const rec = await cal(['recover', '--retry-lost', '--json']);
    const item = rec.json.turns.find((t: any) => t.handle === h);
    expect(item).toMatchObject({ action: 'retried_lost', status: 'completed', answer: 'The codeword was GOLF.' });
    const turns = (await cal(['inspect', h, '--json'])).json.turns;
    expect(turns.filter((t: any) => t.message === message).map((t: any) => t.status)).toEqual(['lost', 'completed']);
    expect(rec.code).toBe(0);
  });

  it('two concurrent recovers never deliver the same message twice', async () => {
    const h = await startSession('FOXTROT');
    const message = 'What was the codeword? (two recovers)';
    const run = spawnCal(['continue', h, message], { CAL_FAULT: 'before-send' });
    await until(() => run.stderr().includes('paused at fault point'), 'the fault point');
    await kill9(run.child);
    const [a, b] = await Promise.all([cal(['recover', '--json']), cal(['recover', '--json'])]);
    const actions = [a, b].flatMap((r) => r.json.turns.filter((t: any) => t.handle === h).map((t: any) => t.action)).sort();
    expect(actions).toContain('delivered');
    expect(actions.filter((x) => x === 'delivered')).toHaveLength(1);
    expect(timesSeen(message)).toBe(1);
    expect((await lastTurn(h)).status).toBe('completed');
  });
});
