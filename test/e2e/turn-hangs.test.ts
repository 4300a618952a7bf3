import { execa } from 'execa';
import { readdirSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleFromStderr } from '../support/cal.js';
import { calBin } from '../support/clis.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { makeWorkDir } from '../support/scratch.js';

/**
 * Issue 50, items 9, 10 and 13, with the real Pi in tmux: a turn the CLI can no longer record
 * ends typed within seconds (and recover settles it), a `cal continue --stream` whose terminal
 * went away (SIGHUP) or that is told to stop (SIGTERM) settles its turn and exits, `cal reap`
 * beside continues never fails one, a start recovered after a kill leaves its handle `idle`, and
 * a start that could not launch anything (no tmux) leaves no handle.
 */
describe('turns that cannot end, and the cal around them (Pi)', () => {
  let s: CliSuite;
  let outer: string;
  const tmuxOuter = (...args: string[]) => execa('tmux', ['-S', outer, ...args], { reject: false });
  const SLOW = '[[cal:chunks=60]][[cal:chunk-delay=500]][[cal:reply=slow answer]]';

  async function start(name: string, codeword: string): Promise<{ h: string; work: string }> {
    const work = await makeWorkDir(s.root, `w-${name}`);
    const run = await s.cal(['start', '--provider', 'pi', '--cwd', work, `Remember the codeword ${codeword}.`]);
    expect(run.code, run.stderr).toBe(0);
    return { h: handleFromStderr(run.stderr) as string, work };
  }

  async function turnStatuses(h: string): Promise<string[]> {
    return ((await s.inspect(h)).turns as Array<{ status: string }>).map((t) => t.status);
  }

  async function until(check: () => Promise<boolean> | boolean, what: string, ms = 60_000): Promise<void> {
    for (const end = Date.now() + ms; Date.now() < end; ) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return !readFileStat(pid).startsWith('Z');
    } catch {
      return false;
    }
  };

  beforeAll(async () => {
    s = await cliSuite('pi', { prefix: 'turn-hangs' });
    outer = path.join(s.root, 'outer.sock');
  }, 120_000);
  afterAll(async () => {
    await tmuxOuter('kill-server');
    await s.close();
  });

  /** `cal continue --stream` running in a pane of a terminal (tmux) of the test's own: its pid. */
  async function continueInTerminal(h: string, message: string): Promise<number> {
    const script = path.join(s.root, `run-${h}.sh`);
    const pidFile = path.join(s.root, `cal-${h}.pid`);
    const envs = Object.entries(s.env).map(([k, v]) => `export ${k}=${JSON.stringify(v)}`).join('\n');
    await fs.writeFile(script, `${envs}\necho $$ > ${pidFile}\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(calBin)} --state-dir ${JSON.stringify(s.state)} continue ${h} --stream ${JSON.stringify(message)}\n`);
    await tmuxOuter('-f', '/dev/null', 'new-session', '-d', '-s', h, '-x', '120', '-y', '40', `bash ${script}`);
    await until(async () => (await fs.readFile(pidFile, 'utf8').catch(() => '')).trim() !== '', 'the pid file');
    const pid = Number((await fs.readFile(pidFile, 'utf8')).trim());
    await until(async () => (await turnStatuses(h)).at(-1) === 'running', 'the turn to run');
    return pid;
  }

  for (const how of ['the terminal goes away (SIGHUP)', 'SIGTERM'] as const) {
    it(`cal continue --stream whose ${how === 'SIGTERM' ? 'process gets SIGTERM' : 'terminal goes away (SIGHUP)'} exits within seconds and settles its turn`, async () => {
      const { h } = await start(how === 'SIGTERM' ? 'term' : 'hup', 'KIWI');
      const pid = await continueInTerminal(h, `Tell me slowly ${SLOW}`);
      const sent = Date.now();
      if (how === 'SIGTERM') process.kill(pid, 'SIGTERM');
      else await tmuxOuter('kill-session', '-t', h);
      await until(() => !alive(pid), 'cal to exit', 25_000);
      expect(Date.now() - sent).toBeLessThan(20_000);
      const statuses = await turnStatuses(h);
      expect(statuses).toEqual(['completed', 'interrupted']);
      // The session goes on.
      const next = await s.cal(['continue', h, '--json', 'What was the codeword?']);
      expect(next.code, next.stderr).toBe(0);
      expect(next.json.turn.answer).toContain('KIWI');
    }, 120_000);
  }

  it('a Pi whose session folder was deleted: continue ends typed within seconds, not at the timeout', async () => {
    const { h } = await start('gone', 'LIME');
    const transcript = (await s.inspect(h)).provider.transcript.path as string;
    await fs.rm(path.dirname(transcript), { recursive: true });
    const t0 = Date.now();
    const run = await s.cal(['continue', h, '--json', 'What was the codeword?']);
    expect(Date.now() - t0).toBeLessThan(30_000);
    expect([run.code, run.json.error.kind]).toEqual([9, 'resume_unavailable']);
    expect(run.json.error.message).toContain('is gone');
    expect(await turnStatuses(h)).toEqual(['completed', 'failed']);
  }, 120_000);

  it('a Pi that cannot write its session file (made immutable): continue ends typed within seconds, not at the timeout', async () => {
    const { h } = await start('frozen', 'FIG');
    const transcript = (await s.inspect(h)).provider.transcript.path as string;
    // Root writes through any mode bits: only the immutable flag makes Pi's append fail here.
    const frozen = await execa('chattr', ['+i', transcript], { reject: false });
    expect(frozen.exitCode, `chattr +i needs a filesystem that keeps the flag: ${frozen.stderr}`).toBe(0);
    try {
      const t0 = Date.now();
      const run = await s.cal(['continue', h, '--json', '--timeout', '300', 'What was the codeword?']);
      expect(Date.now() - t0).toBeLessThan(60_000);
      expect(run.code, run.stderr).not.toBe(14);
      expect(['turn_failed', 'lost']).toContain(run.json.error.kind);
      expect((await turnStatuses(h)).slice(1)).not.toContain('running');
    } finally {
      await execa('chattr', ['-i', transcript], { reject: false });
    }
  }, 120_000);

  it('a turn whose cal was killed and whose Pi session folder was then deleted: recover settles it within seconds', async () => {
    const { h } = await start('gone-recover', 'PLUM');
    const transcript = (await s.inspect(h)).provider.transcript.path as string;
    const bg = s.spawnCal(['continue', h, `Tell me slowly ${SLOW}`]);
    await until(async () => (await turnStatuses(h)).at(-1) === 'running', 'the turn to run');
    process.kill(bg.child.pid!, 'SIGKILL');
    await bg.done;
    await fs.rm(path.dirname(transcript), { recursive: true });
    const t0 = Date.now();
    const recovered = await s.cal(['recover', '--json']);
    expect(Date.now() - t0).toBeLessThan(30_000);
    expect(recovered.code, recovered.stderr).not.toBe(14);
    expect(await turnStatuses(h)).toEqual(['completed', 'failed']);
  }, 120_000);

  it('cal reap beside continues never makes one fail busy', async () => {
    const { h } = await start('reap', 'PEAR');
    for (let i = 0; i < 6; i++) {
      const [cont, reap] = await Promise.all([s.cal(['continue', h, '--json', `Say hello ${i}`]), s.cal(['reap', '--idle', '0'])]);
      expect(cont.code, `${cont.stderr} (round ${i})`).toBe(0);
      expect(reap.code, reap.stderr).toBe(0);
    }
  }, 300_000);

  it('a start killed after its launch and recovered leaves its handle idle beside its completed turn', async () => {
    const work = await makeWorkDir(s.root, 'w-killed-start');
    const bg = s.spawnCal(['start', '--provider', 'pi', '--cwd', work, 'Remember the codeword FIG.'], { env: { CAL_FAULT: 'after-launch' } });
    await until(() => bg.stderr().includes('paused at fault point after-launch'), 'the fault point');
    const h = (await s.cal(['inspect', '--json'])).json.handles.find((x: { provider: { workingDir: { path: string } } }) => x.provider.workingDir.path === work).id as string;
    // Pi has the message in argv: wait until its session holds the reply, then kill cal.
    await until(() => s.server.turnRequests().some((r) => r.lastUserMessage?.includes('FIG')), 'the model request');
    await new Promise((r) => setTimeout(r, 2000));
    try {
      process.kill(bg.child.pid!, 'SIGKILL');
    } catch {
      // Paused on a promise that holds nothing open, cal may already have left its event loop.
    }
    await bg.done;
    const recovered = await s.cal(['recover', '--json']);
    expect(recovered.code, recovered.stderr).toBe(0);
    const view = await s.inspect(h);
    expect(view.turns.map((t: { status: string }) => t.status)).toEqual(['completed']);
    expect(view.provider.status).toBe('idle');
  }, 120_000);

  it('a start that cannot run tmux fails with cli_missing and leaves no handle', async () => {
    // A PATH with everything the suite's has, except tmux.
    const bin = await makeWorkDir(s.root, 'no-tmux-bin');
    for (const dir of (s.env.PATH ?? '').split(':').reverse()) {
      let names: string[];
      try {
        names = readdirSync(dir);
      } catch {
        continue;
      }
      for (const name of names) {
        if (name === 'tmux') continue;
        await fs.rm(path.join(bin, name), { force: true });
        await fs.symlink(path.join(dir, name), path.join(bin, name));
      }
    }
    const before = (await s.cal(['inspect', '--json'])).json.handles.length;
    const work = await makeWorkDir(s.root, 'w-no-tmux');
    const run = await s.cal(['start', '--provider', 'pi', '--cwd', work, '--name', 'no-tmux', 'Remember the codeword FIG.'], { env: { PATH: bin } });
    expect(run.code, run.stderr).toBe(13);
    expect(run.stderr).not.toContain('handle:');
    expect((await s.cal(['inspect', '--json'])).json.handles).toHaveLength(before);
    // The name is free again.
    const again = await s.cal(['start', '--provider', 'pi', '--cwd', work, '--name', 'no-tmux', 'Remember the codeword FIG.']);
    expect(again.code, again.stderr).toBe(0);
  }, 120_000);
});

/** The state letter of a process (`Z` for a zombie nobody reaped yet). */
function readFileStat(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return 'Z';
  }
}

describe('a Codex whose rollout was deleted', () => {
  let s: CliSuite;
  beforeAll(async () => {
    s = await cliSuite('codex', { prefix: 'turn-hangs-codex' });
  }, 120_000);
  afterAll(async () => s.close());

  it('continue ends typed within seconds (Codex writes on into the unlinked file it holds)', async () => {
    const start = await s.cal(['start', '--provider', 'codex', '--cwd', s.work, 'Remember the codeword LIME.']);
    expect(start.code, start.stderr).toBe(0);
    const h = handleFromStderr(start.stderr) as string;
    await fs.rm((await s.inspect(h)).provider.transcript.path as string);
    const t0 = Date.now();
    const run = await s.cal(['continue', h, '--json', 'What was the codeword?']);
    expect(Date.now() - t0).toBeLessThan(30_000);
    expect([run.code, run.json.error.kind]).toEqual([9, 'resume_unavailable']);
    expect(((await s.inspect(h)).turns as Array<{ status: string }>).map((t) => t.status)).toEqual(['completed', 'failed']);
  }, 120_000);
});
