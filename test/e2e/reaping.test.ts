import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleFromStderr } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';

/**
 * Issue 42, item 1 acceptance: with a policy of at most 2 live panes, 5 real Codex sessions
 * continued in turn leave at most 2 panes alive (cal's records and tmux's own pane list agree),
 * and every one recalls its own codeword on its next continue (a reaped pane resumes natively).
 * `cal reap --idle 0` ends the rest, and cal's tmux server exits with its last session.
 */
describe('reaping idle panes (real Codex, real tmux)', () => {
  let suite: CliSuite;

  beforeAll(async () => {
    suite = await cliSuite('codex', { prefix: 'reap' });
    mkdirSync(suite.state, { recursive: true, mode: 0o700 });
    writeFileSync(path.join(suite.state, 'config.json'), JSON.stringify({ reap: { maxLive: 2 } }));
  });

  afterAll(async () => {
    await suite?.close();
  });

  /** The live panes on cal's tmux socket, as tmux lists them (none when its server is gone). */
  async function tmuxPanes(): Promise<string[]> {
    const res = await execa('tmux', ['-S', await suite.tmuxSocket(), 'list-panes', '-a', '-F', '#{pane_id} #{pane_dead}'], { reject: false });
    if (res.exitCode !== 0) return [];
    return res.stdout.split('\n').filter((l) => l.endsWith(' 0')).map((l) => l.split(' ')[0]!).sort();
  }

  /** The panes cal's records call current, from `cal inspect --json` of every handle. */
  async function recordedPanes(ids: string[]): Promise<string[]> {
    const out: string[] = [];
    for (const id of ids) {
      const view = await suite.inspect(id);
      if (view.provider.tmux) out.push(view.provider.tmux.paneId);
    }
    return out.sort();
  }

  it('5 sessions under max-live 2: at most 2 panes, records agree with tmux, each recalls its codeword', async () => {
    const words = ['ALPHA', 'BRAVO', 'CHARLIE', 'DELTA', 'ECHO'];
    const ids: string[] = [];
    for (const word of words) {
      const run = await suite.cal(['start', '--provider', 'codex', '--cwd', await suite.workDir(`w-${word}`), `Remember the codeword ${word}.`]);
      expect(run.code, run.stderr).toBe(0);
      ids.push(handleFromStderr(run.stderr)!);
      expect((await tmuxPanes()).length).toBeLessThanOrEqual(2);
    }
    expect(await recordedPanes(ids)).toEqual(await tmuxPanes());
    for (const [i, id] of ids.entries()) {
      const run = await suite.cal(['continue', id, '--json', 'What was the codeword?']);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.json.turn.answer).toBe(`The codeword was ${words[i]}.`);
      const live = await tmuxPanes();
      expect(live.length).toBeLessThanOrEqual(2);
      expect(await recordedPanes(ids)).toEqual(live);
    }
    // The first three were reaped at least once and resumed natively (no lost_tmux: cal ended them).
    const events = (await suite.cal(['events', ids[0]!])).stdout.split('\n').map((l) => JSON.parse(l).event);
    expect(events).toContain('pane_reaped');
    expect(events).toContain('resuming');
    expect(events).not.toContain('lost_tmux');

    const dry = await suite.cal(['reap', '--idle', '0', '--dry-run', '--json']);
    expect(dry.code).toBe(0);
    expect(dry.json.ended).toBe(2);
    expect((await tmuxPanes()).length).toBe(2);
    const reaped = await suite.cal(['reap', '--idle', '0', '--json']);
    expect(reaped.json.panes.map((p: any) => p.action)).toEqual(['reaped', 'reaped']);
    // exit-empty: the server went with its last session.
    const server = await execa('tmux', ['-S', await suite.tmuxSocket(), 'list-sessions'], { reject: false });
    expect(server.exitCode).not.toBe(0);
    expect(await recordedPanes(ids)).toEqual([]);
    const again = await suite.cal(['continue', ids[4]!, '--json', 'What was the codeword?']);
    expect(again.json.turn.answer).toBe('The codeword was ECHO.');
  }, 600_000);
});
