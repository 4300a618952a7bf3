import { execSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentSessionHandle } from '../../src/handles/schema.js';
import type { ModelServer } from '../../src/model/server.js';
import { handleFromStderr, killStateTmux } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { recordFault } from '../support/fault-matrix.js';

/**
 * Issue 7 faults with the real Claude Code binary in real tmux. Each fault ends in a typed error
 * or a recoverable turn, never a corrupt handle; where the session can go on, the next continue
 * proves it.
 */
const FILE = 'test/faults/claude-faults.test.ts';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('faults with the real Claude Code', () => {
  let suite: CliSuite;
  let server: ModelServer;
  let root: string;

  beforeAll(async () => {
    suite = await cliSuite('claude-code', { prefix: 'faults' });
    ({ server, root } = suite);
  });

  afterAll(async () => {
    await suite?.close();
  });

  /** A fresh state dir and session that remembers a codeword. */
  async function session(name: string, codeword: string) {
    const state = suite.stateDir(path.join(name, 'state'));
    const work = await suite.workDir(path.join(name, 'work'));
    const cal = (args: string[], input?: string) => suite.cal(args, { input, state });
    const start = await cal(['start', '--provider', 'claude-code', '--cwd', work, `Remember the codeword ${codeword}.`]);
    expect(start.code).toBe(0);
    const handle = handleFromStderr(start.stderr) ?? '';
    const inspect = () => suite.inspect(handle, { state });
    /** Starts `cal continue` in the background; resolves once its turn is running. */
    const slowContinue = async (message: string) => {
      const run = suite.spawnCal(['continue', handle, '--json', message], { state });
      for (let i = 0; i < 100; i++) {
        const turns = await readTurns(state, handle);
        if (turns.at(-1)?.status === 'running' && turns.length > 1) break;
        await sleep(100);
      }
      return run;
    };
    return { state, work, cal, handle, inspect, slowContinue };
  }

  async function readTurns(state: string, handle: string): Promise<any[]> {
    const dir = path.join(state, 'turns', handle);
    const out: any[] = [];
    for (const f of await fs.readdir(dir).catch(() => [] as string[])) {
      if (!f.endsWith('.json')) continue;
      try {
        out.push(JSON.parse(await fs.readFile(path.join(dir, f), 'utf8')));
      } catch {
        // being written
      }
    }
    return out.sort((a, b) => a.seq - b.seq);
  }

  /** The handle file parses through the schema (never corrupt). */
  async function handleIsValid(state: string, handle: string): Promise<boolean> {
    const text = await fs.readFile(path.join(state, 'handles', `${handle}.json`), 'utf8');
    return AgentSessionHandle.safeParse(JSON.parse(text)).success;
  }

  it('tmux server killed mid-turn: the turn ends lost (exit 12); the next continue resumes natively', async () => {
    const s = await session('tmux-killed', 'BIRCH');
    const { done } = await s.slowContinue('Slow turn [[cal:delay=8000]]');
    await killStateTmux(s.state);
    const run = await done;
    expect(run.code).toBe(12);
    expect(run.json.turn.status).toBe('lost');
    expect(await handleIsValid(s.state, s.handle)).toBe(true);
    const view = await s.inspect();
    expect(view.turns.at(-1).status).toBe('lost');
    const next = await s.cal(['continue', s.handle, '--json', '--events', 'What was the codeword?']);
    expect(next.code).toBe(0);
    expect(next.json.turn.answer).toBe('The codeword was BIRCH.');
    expect(next.stderr).toMatch(/lost_tmux[\s\S]*resuming/);
    recordFault({
      id: 'fault.tmux-server-killed',
      area: 'fault',
      fault: 'tmux server killed mid-turn',
      how: '`tmux -S <cal socket> kill-server` while `cal continue` waits on a slow turn',
      outcome: `exit ${run.code} (lost), turn status lost; next continue: lost_tmux, resuming, answer from the resumed session (exit 0)`,
      state: 'handle valid (schema-checked); pane archived',
      test: FILE,
    });
  });

  it('CLI process killed mid-turn: the turn ends lost (exit 12); the next continue resumes natively', async () => {
    const s = await session('cli-killed', 'CEDAR');
    const { done } = await s.slowContinue('Slow turn [[cal:delay=8000]]');
    const view = await s.inspect();
    const socket = await suite.tmuxSocket(s.state);
    const pid = (await execa('tmux', ['-S', socket, 'display-message', '-p', '-t', view.provider.tmux.paneId, '#{pane_pid}'])).stdout.trim();
    process.kill(Number(pid), 'SIGKILL');
    const run = await done;
    expect(run.code).toBe(12);
    expect(run.json.turn.status).toBe('lost');
    expect(await handleIsValid(s.state, s.handle)).toBe(true);
    const next = await s.cal(['continue', s.handle, '--json', 'What was the codeword?']);
    expect(next.code).toBe(0);
    expect(next.json.turn.answer).toBe('The codeword was CEDAR.');
    recordFault({
      id: 'fault.cli-killed',
      area: 'fault',
      fault: 'the CLI process killed mid-turn (SIGKILL)',
      how: "`kill -9` of the pane's claude process while `cal continue` waits on a slow turn",
      outcome: `exit ${run.code} (lost), turn status lost; next continue resumes natively (exit 0) and recalls`,
      state: 'handle valid; dead pane archived',
      test: FILE,
    });
  });

  it('cal itself killed mid-turn: cal recover settles the turn from the transcript', async () => {
    const s = await session('cal-killed', 'DAHLIA');
    const { child, done } = await s.slowContinue('Slow turn [[cal:delay=3000]]');
    child.kill('SIGKILL');
    await done;
    expect(await handleIsValid(s.state, s.handle)).toBe(true);
    expect((await readTurns(s.state, s.handle)).at(-1).status).toBe('running');
    await sleep(3500);
    const rec = await s.cal(['recover', '--json']);
    expect(rec.code).toBe(0);
    expect(rec.json.turns[0]).toMatchObject({ status: 'completed' });
    const turn = (await readTurns(s.state, s.handle)).at(-1);
    expect(turn.status).toBe('completed');
    expect(turn.answer).toMatch(/^Received: Slow turn/);
    const next = await s.cal(['continue', s.handle, 'What was the codeword?']);
    expect(next.stdout.trim()).toBe('The codeword was DAHLIA.');
    recordFault({
      id: 'fault.cal-killed',
      area: 'fault',
      fault: 'cal itself killed mid-turn (SIGKILL)',
      how: '`kill -9` of `cal continue` while its turn runs; then `cal recover`',
      outcome: 'turn left running (its owner is dead); recover settles it completed with the answer from the transcript (exit 0); nothing is sent twice',
      state: 'handle valid; the session continues',
      test: FILE,
    });
  });

  it('transcript file deleted between turns: a typed error, the handle intact', async () => {
    const s = await session('transcript-deleted', 'ELM');
    const view = await s.inspect();
    await fs.rm(view.provider.transcript.path);
    const run = await s.cal(['continue', s.handle, '--json', '--timeout', '20', 'What was the codeword?']);
    expect([9, 12, 14]).toContain(run.code);
    expect(run.json.error.kind).toMatch(/resume_unavailable|lost|timeout/);
    expect(await handleIsValid(s.state, s.handle)).toBe(true);
    const after = await s.inspect();
    recordFault({
      id: 'fault.transcript-deleted',
      area: 'fault',
      fault: "the CLI's transcript file deleted between turns",
      how: '`rm` of the transcript, then `cal continue` into the live pane',
      outcome: `exit ${run.code} (${run.json.error.kind}): "${run.json.error.message.replace(/\/\S+/g, '<path>')}"; turn ${after.turns.at(-1).status}`,
      state: 'handle valid (schema-checked)',
      test: FILE,
    });
  });

  it('9 MB of garbage lines and a 20 MB line land in the transcript between turns: the tail moves past them', async () => {
    const s = await session('transcript-junk', 'FERN');
    const view = await s.inspect();
    await fs.appendFile(view.provider.transcript.path, `${'not json at all\n'.repeat(9 << 16)}${'\u0000junk'.repeat(4 << 20)}\n`);
    const run = await s.cal(['continue', s.handle, '--json', '--timeout', '30', 'What was the codeword?']);
    expect(run.code).toBe(0);
    expect(run.json.turn.answer).toBe('The codeword was FERN.');
    recordFault({
      id: 'fault.transcript-junk-line',
      area: 'fault',
      fault: '9 MB of non-JSON lines and a 20 MB line appended to the transcript between turns',
      how: 'append to the transcript, then `cal continue`',
      outcome: 'the lines are passed over (skipped, counted); the turn after them completes (exit 0)',
      state: 'handle valid',
      test: FILE,
    });
  });

  const canMount = typeof process.getuid === 'function' && process.getuid() === 0;

  /** Fills a filesystem to the last block; returns a function that frees the space again. */
  async function fillDisk(dir: string): Promise<() => Promise<void>> {
    const fillers: string[] = [];
    for (let i = 0; i < 10_000; i++) {
      const f = path.join(dir, `filler-${i}`);
      fillers.push(f);
      try {
        await fs.writeFile(f, Buffer.alloc(i === 0 ? 1 << 20 : 512, 1));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOSPC') break;
        throw err;
      }
    }
    return async () => {
      for (const f of fillers) await fs.rm(f, { force: true });
    };
  }

  it.skipIf(!canMount)('disk full (small tmpfs) before and during a turn: typed error, handle intact, turn recoverable', async () => {
    const base = path.join(root, 'diskfull');
    await fs.mkdir(base, { recursive: true });
    const mnt = path.join(base, 'mnt');
    await fs.mkdir(mnt, { mode: 0o700 });
    execSync(`mount -t tmpfs -o size=2m,mode=0700 tmpfs ${mnt}`);
    const state = path.join(mnt, 'state');
    try {
      const work = await suite.workDir(path.join('diskfull', 'work'));
      const cal = (args: string[]) => suite.cal(args, { state });
      const start = await cal(['start', '--provider', 'claude-code', '--cwd', work, 'Remember the codeword GINKGO.']);
      expect(start.code).toBe(0);
      const handle = handleFromStderr(start.stderr) ?? '';
      const handleFile = path.join(state, 'handles', `${handle}.json`);
      const before = await fs.readFile(handleFile, 'utf8');

      // Full before the turn: nothing is sent, the handle is untouched.
      let free = await fillDisk(mnt);
      const turnsBefore = server.turnRequests().length;
      const full = await cal(['continue', handle, '--json', 'What was the codeword?']);
      await free();
      expect(full.code).toBe(2);
      expect(full.json.error).toMatchObject({ kind: 'usage', message: expect.stringMatching(/no space left on the device; .*cal recover/) });
      expect(server.turnRequests().length).toBe(turnsBefore);
      expect(await fs.readFile(handleFile, 'utf8')).toBe(before);

      // Full during the turn: the end-of-turn writes fail; the old handle stays whole.
      const slow = suite.spawnCal(['continue', handle, '--json', 'Slow turn [[cal:delay=3000]]'], { state });
      for (let i = 0; i < 100 && (await readTurns(state, handle)).at(-1)?.status !== 'running'; i++) await sleep(100);
      free = await fillDisk(mnt);
      const mid = await slow.done;
      const midJson = mid.json;
      expect(mid.code).toBe(2);
      expect(midJson.error.message).toMatch(/no space left on the device/);
      expect(await handleIsValid(state, handle)).toBe(true);
      await free();
      const rec = await cal(['recover', '--json']);
      expect(rec.code).toBe(0);
      expect(rec.json.turns).toEqual([expect.objectContaining({ before: 'running', status: 'completed', answer: 'Received: Slow turn' })]);
      const next = await cal(['continue', handle, 'What was the codeword?']);
      expect(next.stdout.trim()).toBe('The codeword was GINKGO.');
      recordFault({
        id: 'fault.disk-full',
        area: 'fault',
        fault: 'disk full while writing the handle and turn records',
        how: 'state dir on a 2 MB tmpfs filled to the last block before a turn, and during one',
        outcome: `before: exit ${full.code} (${full.json?.error?.kind}), nothing sent; during: exit ${mid.code} (${midJson?.error?.kind ?? midJson?.turn?.status}); after freeing space recover settles the turn (${rec.json?.turns?.[0]?.status}) and the session continues`,
        state: 'handle file never torn (atomic rename); schema-valid throughout',
        test: FILE,
      });
    } finally {
      // The tmux socket lives on the tmpfs: end the server before the mount goes.
      await killStateTmux(state);
      execSync(`umount -l ${mnt}`);
    }
  });

  it('state directory removed while cal waits on a turn: a typed error, no hang', async () => {
    const s = await session('state-removed', 'HAZEL');
    const socket = await suite.tmuxSocket(s.state);
    const serverPid = Number((await execa('tmux', ['-S', socket, 'display-message', '-p', '#{pid}'])).stdout.trim());
    const { done } = await s.slowContinue('Slow turn [[cal:delay=3000]]');
    await fs.rm(s.state, { recursive: true, force: true });
    const t0 = Date.now();
    const run = await done;
    const elapsed = Date.now() - t0;
    // The tmux server lost its socket with the folder: cal cannot reach it any more, so the test
    // ends it by pid (its own server, found before the removal).
    let orphan = false;
    try {
      process.kill(serverPid, 0);
      orphan = true;
      process.kill(serverPid, 'SIGTERM');
    } catch {
      orphan = false;
    }
    expect(run.code).toBe(2);
    expect(run.json.error).toMatchObject({ kind: 'usage', message: expect.stringMatching(/state directory removed while cal ran/) });
    expect(elapsed).toBeLessThan(10_000);
    // cal does not recreate a state directory that was removed under it.
    expect(await fs.readdir(s.state).catch(() => null)).toBeNull();
    recordFault({
      id: 'fault.state-dir-removed',
      area: 'fault',
      fault: 'state directory removed (rm -rf) while cal waits on a turn',
      how: '`rm -rf <state dir>` during a slow `cal continue`',
      outcome: `exit ${run.code} (usage: "cannot write …: its folder is gone (was the state directory removed while cal ran?)") after ${(elapsed / 1000).toFixed(1)} s; the directory is not recreated${orphan ? "; the tmux server, whose socket went with the folder, keeps running unreachable (see docs/security.md)" : ''}`,
      state: 'no handle left to corrupt; nothing recreated',
      test: FILE,
    });
  });
});
