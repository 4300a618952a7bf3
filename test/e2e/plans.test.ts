import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelServer } from '../../src/model/server.js';
import type { CalRun } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';

/**
 * Issue 6 acceptance (plans): post-step phases on one logical session survive a lost pane, a
 * lock held elsewhere and a killed cal; notify runs exactly once, after everything before it.
 */
describe('cal run: durable post-step phases', () => {
  let suite: CliSuite;
  let server: ModelServer;
  let root: string;
  /** Each test has its own state dir, so its own tmux server. */
  let state: string;

  const cal = (args: string[]): Promise<CalRun> => suite.cal(args, { state });
  const seen = (text: string) => server.turnRequests().filter((r) => r.lastUserMessage?.includes(text)).length;
  const spawnCal = (args: string[]) => suite.spawnCal(args, { state }).child;

  async function until(check: () => Promise<boolean>, what: string): Promise<void> {
    for (let i = 0; i < 600; i++) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  async function onlyRun(): Promise<any> {
    const dir = path.join(state, 'runs');
    const files = (await fs.readdir(dir).catch(() => [])).filter((f) => f.endsWith('.json'));
    if (files.length !== 1) return null;
    return JSON.parse(await fs.readFile(path.join(dir, files[0]!), 'utf8').catch(() => 'null'));
  }

  async function writePlan(name: string, work: string, notifyLog: string, kbMessage: string): Promise<string> {
    const plan = {
      version: 1,
      name,
      session: { provider: 'claude-code', cwd: work },
      phases: [
        { id: 'main', message: `Remember the codeword ${name}.` },
        { id: 'pre_validation', message: `Validate ${name}: what was the codeword?` },
        { id: 'learning', lock: 'learning', message: `Learning ${name}: what was the codeword?` },
        { id: 'kb_review', message: kbMessage },
        { id: 'notify', command: ['sh', '-c', `echo "$CAL_PHASE $CAL_RUN_ID" >> ${notifyLog}`] },
      ],
    };
    const file = path.join(root, `${name}.json`);
    await fs.writeFile(file, JSON.stringify(plan));
    return file;
  }

  beforeAll(async () => {
    suite = await cliSuite('claude-code', { prefix: 'plans' });
    ({ server, root } = suite);
  });

  afterAll(async () => {
    await suite?.close();
  });

  it('a learning phase waits on a lock held elsewhere, the pane is killed meanwhile, and the plan completes through native resume', async () => {
    state = suite.stateDir('state-a');
    const work = await suite.workDir('plan-a');
    const notify = path.join(root, 'notify-a.log');
    const release = path.join(root, 'release-a');
    const plan = await writePlan('KESTREL', work, notify, 'Review KESTREL: what was the codeword?');

    const holder = spawnCal(['lock', 'learning', '--', 'sh', '-c', `while [ ! -f ${release} ]; do sleep 0.1; done`]);
    await until(async () => (await fs.readdir(path.join(state, 'locks')).catch(() => [] as string[])).includes('named-learning.lock'), 'the lock holder');
    const running = cal(['run', plan, '--json']);
    await until(async () => (await onlyRun())?.phases[2].status === 'waiting_for_lock', 'learning to wait for its lock');
    const run = await onlyRun();
    expect(run.phases.slice(0, 2).map((p: any) => p.status)).toEqual(['completed', 'completed']);
    expect(await fs.stat(notify).catch(() => null)).toBeNull();

    expect((await cal(['kill-tmux', run.handle])).code).toBe(0);
    await fs.writeFile(release, '');
    const done = await running;
    if (holder.exitCode === null) await new Promise((r) => holder.on('exit', r));
    expect(holder.exitCode).toBe(0);
    expect(done.code, done.stdout + done.stderr).toBe(0);
    expect(done.json.phases.map((p: any) => p.status)).toEqual(Array(5).fill('completed'));

    const events = (await cal(['events', run.handle])).stdout.trim().split('\n').map((l) => JSON.parse(l));
    const names = events.map((e) => e.event);
    expect(names.indexOf('waiting_for_lock')).toBeLessThan(names.indexOf('lost_tmux'));
    expect(names).toContain('resuming');
    const turns = (await cal(['inspect', run.handle, '--json'])).json.turns;
    expect(turns.find((t: any) => t.correlationId?.endsWith(':learning')).answer).toBe('The codeword was KESTREL.');
    expect((await fs.readFile(notify, 'utf8')).trim().split('\n')).toEqual([`notify ${run.id}`]);
    for (const m of ['Remember the codeword KESTREL.', 'Validate KESTREL', 'Learning KESTREL', 'Review KESTREL']) expect(seen(m)).toBe(1);
  });

  it('a plan whose cal is killed mid-phase resumes from that phase after cal recover', async () => {
    state = suite.stateDir('state-b');
    const work = await suite.workDir('plan-b');
    const notify = path.join(root, 'notify-b.log');
    const plan = await writePlan('HERON', work, notify, 'Review HERON slowly [[cal:delay=2500]]: what was the codeword?');
    const child = spawnCal(['run', plan]);
    await until(async () => (await onlyRun())?.phases[3].status === 'running', 'kb_review to run');
    await new Promise((r) => setTimeout(r, 600));
    child.kill('SIGKILL');
    await new Promise((r) => child.on('exit', r));
    expect(await fs.stat(notify).catch(() => null)).toBeNull();

    const rec = await cal(['recover', '--json']);
    expect(rec.code, rec.stdout + rec.stderr).toBe(0);
    const run = await onlyRun();
    expect(rec.json.runs).toEqual([{ run: run.id, status: 'completed' }]);
    expect(run.phases.map((p: any) => p.status)).toEqual(Array(5).fill('completed'));
    expect((await fs.readFile(notify, 'utf8')).trim().split('\n')).toEqual([`notify ${run.id}`]);
    for (const m of ['Remember the codeword HERON.', 'Validate HERON', 'Learning HERON', 'Review HERON slowly']) expect(seen(m)).toBe(1);
    // Nothing left to do: a second recover changes nothing and notify stays at one line.
    const again = await cal(['recover', '--json']);
    expect(again.json.runs).toEqual([]);
    expect((await fs.readFile(notify, 'utf8')).trim().split('\n')).toHaveLength(1);
  });
});
