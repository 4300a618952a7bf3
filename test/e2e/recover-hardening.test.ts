import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tmuxSocketFor } from '../../src/engine/tmux-socket.js';
import { handleFromStderr, type CalRun } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { makeWorkDir } from '../support/scratch.js';
import { calBin } from '../support/clis.js';

/**
 * Issue 13, items 3 and 4, with the real Claude Code: a message the CLI already received is
 * settled from its transcript and never sent again, whatever happened around it (a timeout and a
 * newer turn, a record whose clock lies in the future, a start killed right after its launch).
 */
describe('recover never sends an answered message twice', () => {
  let s: CliSuite;
  const timesSeen = (text: string) => s.server.turnRequests().filter((r) => r.lastUserMessage?.includes(text)).length;
  const cal = (args: string[]): Promise<CalRun> => s.cal(args);

  function spawnCal(args: string[], extraEnv: Record<string, string> = {}): { child: ChildProcess; stderr: () => string } {
    let stderr = '';
    const child = spawn(process.execPath, [calBin, '--state-dir', s.state, ...args], { env: { ...s.env, ...extraEnv }, stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    return { child, stderr: () => stderr };
  }

  async function until(check: () => Promise<boolean> | boolean, what: string, tries = 400): Promise<void> {
    for (let i = 0; i < tries; i++) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  async function turns(h: string): Promise<any[]> {
    const dir = path.join(s.state, 'turns', h);
    const files = (await fs.readdir(dir).catch(() => [] as string[])).filter((f) => /^t\d+-[a-z0-9]+\.json$/.test(f)).sort();
    return Promise.all(files.map(async (f) => JSON.parse(await fs.readFile(path.join(dir, f), 'utf8'))));
  }

  async function startSession(codeword: string): Promise<string> {
    const work = await makeWorkDir(s.root, `w-${codeword}`);
    const run = await cal(['start', '--provider', 'claude-code', '--cwd', work, `Remember the codeword ${codeword}.`]);
    expect(run.code, run.stderr).toBe(0);
    return handleFromStderr(run.stderr) as string;
  }

  beforeAll(async () => {
    s = await cliSuite('claude-code', { prefix: 'recover-hardening' });
  });
  afterAll(async () => s.close());

  it('a timed-out turn the CLI answered later, then a newer turn, then kill-tmux and recover: delivered once', async () => {
    const h = await startSession('QUARTZ');
    const slow = 'Answer late please [[cal:delay=4000]]';
    expect((await cal(['continue', h, '--timeout', '2', slow])).code).toBe(14);
    await until(async () => (await s.server.turnRequests()).some((r) => r.lastUserMessage?.includes('Answer late')), 'the slow request');
    await new Promise((r) => setTimeout(r, 5000));
    const newer = await cal(['continue', h, '--timeout', '60', 'What was the codeword?']);
    expect(newer.code, newer.stderr).toBe(0);
    expect(newer.stdout.trim()).toBe('The codeword was QUARTZ.');
    expect((await cal(['kill-tmux', h])).code).toBe(0);
    const rec = await cal(['recover', '--json']);
    expect(rec.code, rec.stdout).toBe(0);
    expect(timesSeen('Answer late')).toBe(1);
    const slowTurn = (await turns(h)).find((t) => t.message === slow);
    expect(slowTurn.status).toBe('completed');
  });

  it('a turn record whose clock lies in the future (clock stepped back) is settled from the transcript, not sent again', async () => {
    const h = await startSession('ONYX');
    const message = 'Slow and then killed [[cal:delay=2500]]';
    const run = spawnCal(['continue', h, message]);
    await until(async () => (await turns(h)).at(-1)?.status === 'running', 'the running turn');
    run.child.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 4000));
    const dir = path.join(s.state, 'turns', h);
    const last = (await turns(h)).at(-1);
    const future = new Date(Date.now() + 24 * 3600_000).toISOString();
    await fs.writeFile(path.join(dir, `${last.id}.json`), JSON.stringify({ ...last, createdAt: future, sentAt: future }), { mode: 0o600 });
    const rec = await cal(['recover', '--json']);
    expect(rec.code, rec.stdout).toBe(0);
    expect(rec.json.turns).toEqual([expect.objectContaining({ turn: last.id, action: 'settled_from_transcript', status: 'completed' })]);
    expect(timesSeen('Slow and then killed')).toBe(1);
  });

  it('a start killed right after its pane launched: recover settles it from the transcript; continue and kill-tmux work; no orphan pane', async () => {
    const work = await makeWorkDir(s.root, 'w-orphan');
    const run = spawnCal(['start', '--provider', 'claude-code', '--cwd', work, '--name', 'orphaned', 'Remember the codeword JADE.'], { CAL_FAULT: 'after-launch' });
    await until(() => run.stderr().includes('paused at fault point after-launch'), 'the fault point');
    run.child.kill('SIGKILL');
    await until(() => timesSeen('Remember the codeword JADE') >= 1, 'the CLI answering in the orphan pane');
    await new Promise((r) => setTimeout(r, 3000));
    const rec = await cal(['recover', '--json']);
    expect(rec.code, rec.stdout).toBe(0);
    expect(rec.json.turns[0]).toMatchObject({ action: 'settled_from_transcript', status: 'completed' });
    expect(timesSeen('Remember the codeword JADE')).toBe(1);
    const next = await cal(['continue', 'orphaned', '--timeout', '60', 'What was the codeword?']);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stdout.trim()).toBe('The codeword was JADE.');
    expect((await cal(['kill-tmux', 'orphaned'])).code).toBe(0);
    const socket = await tmuxSocketFor(path.join(s.state, 'tmux'));
    const sessions = await execa('tmux', ['-S', socket, 'list-sessions', '-F', '#{session_name} #{pane_dead}'], { reject: false });
    const handle = (await cal(['inspect', 'orphaned', '--json'])).json.id as string;
    expect(sessions.stdout.split('\n').filter((l) => l.startsWith(`cal-${handle}-`) && l.endsWith(' 0'))).toEqual([]);
  });
});
