import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claudeCodeAdapter } from '../../src/adapters/claude-code/index.js';
import { openSessions } from '../../src/index.js';
import { runCal, type CalRun } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { startRedis, startWorker, stopChild, until, type RedisServer, type WorkerProcess } from '../support/fleet.js';

/**
 * The fleet (docs/fleet.md) with the real pinned Claude Code in real tmux against the scripted
 * model: two `cal worker` processes (each its own state directory, so its own tmux server, and
 * its own HOME) on a real redis-server. Run under the real-CLI lock.
 */
describe('a fleet of cal workers driving the real Claude Code', () => {
  let suite: CliSuite;
  let redis: RedisServer;
  const workers = new Map<string, WorkerProcess>();
  const envs = new Map<string, Record<string, string>>();

  const seen = (text: string) => suite.server.turnRequests().filter((r) => r.lastUserMessage?.includes(text)).length;
  const cal = (args: string[]): Promise<CalRun> => runCal(['--fleet', redis.url, ...args], { env: { PATH: suite.env.PATH!, HOME: suite.home } });
  const launch = async (host: string) => {
    workers.set(host, await startWorker(redis.url, host, path.join(suite.root, host, 'state'), envs.get(host)!, ['--slots', '2']));
  };

  beforeAll(async () => {
    suite = await cliSuite('claude-code', { prefix: 'fleet-real' });
    redis = await startRedis(suite.root);
    for (const host of ['r1', 'r2']) {
      await fs.mkdir(path.join(suite.root, host), { recursive: true });
      const env = await claudeCodeAdapter.scriptedModelEnv(path.join(suite.root, host), suite.server.url, { ...suite.env });
      envs.set(host, { ...env, DISABLE_AUTOUPDATER: '1', CAL_FLEET_LOCK_MS: '3000' });
      await launch(host);
    }
  }, 120_000);

  afterAll(async () => {
    for (const w of workers.values()) await stopChild(w.child, 'SIGKILL');
    await redis?.stop();
    const { execFileSync } = await import('node:child_process');
    for (const host of ['r1', 'r2']) {
      try {
        execFileSync('tmux', ['-S', await suite.tmuxSocket(path.join(suite.root, host, 'state')), 'kill-server'], { stdio: 'ignore' });
      } catch {
        // no server left
      }
    }
    await suite?.close();
  });

  it('sessions started through the fleet recall their codewords on continue, after kill-tmux too; a second client gets busy; the library gives the CLI\'s JSON', async () => {
    const work = await suite.workDir('w');
    const a = await cal(['start', '--provider', 'claude-code', '--cwd', work, '--name', 'ra', '--json', 'Remember the codeword OSPREY.']);
    expect(a.code, a.stderr).toBe(0);
    expect(['r1', 'r2']).toContain(a.json.host);
    const recall = await cal(['continue', 'ra', '--json', 'What was the codeword?']);
    expect(recall.code, recall.stderr).toBe(0);
    expect(recall.json.turn.answer).toContain('OSPREY');
    expect((await cal(['kill-tmux', 'ra'])).code).toBe(0);
    const slow = cal(['continue', 'ra', '--json', 'What was the codeword? [[cal:delay=4000]]']);
    await until(() => seen('[[cal:delay=4000]]') === 1, 'the slow turn at the model', 60_000);
    const second = await cal(['continue', 'ra', '--json', 'Second client']);
    expect(second.code, second.stderr).toBe(5);
    const resumed = await slow;
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.json.turn.answer).toContain('OSPREY');
    const sessions = await openSessions({ fleet: { connection: redis.url } });
    try {
      const lib = await sessions.continue('ra', 'What was the codeword?');
      expect(lib.handle.host).toBe(a.json.host);
      expect(lib.turn.answer).toContain('OSPREY');
    } finally {
      await sessions.close();
    }
    expect(seen('Second client')).toBe(0);
  }, 240_000);

  it('a worker SIGKILLed while its turn runs and restarted: the turn settles, the model saw the message once; a worker left down: exit 17 within the bound', async () => {
    const work = await suite.workDir('k');
    const s = await cal(['start', '--provider', 'claude-code', '--cwd', work, '--json', 'Remember the codeword HERON.']);
    expect(s.code, s.stderr).toBe(0);
    const host = s.json.host as string;
    const message = 'What was the codeword? Killed worker. [[cal:delay=3000]]';
    const pending = cal(['continue', s.json.handle, '--json', '--host-wait', '90', message]);
    await until(() => seen('Killed worker.') === 1, 'the turn at the model', 60_000);
    await stopChild(workers.get(host)!.child, 'SIGKILL');
    await launch(host);
    const settled = await pending;
    expect(settled.code, settled.stderr).toBe(0);
    expect(settled.json.turn.answer).toContain('HERON');
    expect(seen('Killed worker.')).toBe(1);

    await stopChild(workers.get(host)!.child, 'SIGKILL');
    const t0 = Date.now();
    const down = await cal(['continue', s.json.handle, '--json', '--host-wait', '3', 'Host down?']);
    expect(down.code, down.stderr).toBe(17);
    expect(Date.now() - t0).toBeLessThan(3000 + 3000 + 3000);
    expect(seen('Host down?')).toBe(0);
    await launch(host);
  }, 240_000);

  it('a turn that hit --timeout on its worker is settled by cal recover from Claude Code\'s transcript (the worker lives on): completed, the model saw it once', async () => {
    const work = await suite.workDir('t');
    const s = await cal(['start', '--provider', 'claude-code', '--cwd', work, '--json', 'Remember the codeword EGRET.']);
    expect(s.code, s.stderr).toBe(0);
    const message = 'What was the codeword? Timed out on its worker. [[cal:delay=8000]]';
    const timedOut = await cal(['continue', s.json.handle, '--json', '--timeout', '3', message]);
    expect(timedOut.code, timedOut.stdout + timedOut.stderr).toBe(14);
    expect(timedOut.json.error.message).toMatch(/cal recover settles it/);
    await until(() => seen('Timed out on its worker.') === 1, 'the turn at the model', 60_000);
    const recovered = await cal(['recover', '--json']);
    expect(recovered.code, recovered.stdout + recovered.stderr).toBe(0);
    const item = recovered.json.turns.find((t: { turn: string }) => t.turn === timedOut.json.error.turn);
    expect(item, recovered.stdout).toMatchObject({ status: 'completed' });
    expect(item.answer).toContain('EGRET');
    expect(seen('Timed out on its worker.')).toBe(1);
  }, 240_000);
});
