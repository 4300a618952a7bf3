import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleFromStderr, scratchDir } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { repoRoot } from '../support/clis.js';
import { recordFault } from '../support/fault-matrix.js';

/**
 * Issue 7 bounds: a 1 GB transcript is tailed from its stored offset without being loaded, and
 * --timeout ends a wait on a hung CLI (real Claude Code) with the timeout error and a turn record
 * that recover can settle.
 */
const FILE = 'test/faults/bounds.test.ts';
const GB = 1 << 30;

/** Runs readJsonlFrom in a fresh node process and reports records, time and peak RSS. */
async function tailInChild(file: string, offset: number) {
  const script = `
    const { readJsonlFrom } = await import(${JSON.stringify(path.join(repoRoot, 'dist', 'transcripts', 'jsonl-tail.js'))});
    const t0 = Date.now();
    // As the engine does: read from the stored offset, then from the returned one, until it stops.
    let offset = ${offset}, records = 0, skipped = 0;
    for (;;) {
      const r = await readJsonlFrom(${JSON.stringify(file)}, offset);
      records += r.records.length;
      skipped += r.skipped;
      if (r.offset === offset) break;
      offset = r.offset;
    }
    console.log(JSON.stringify({ records, skipped, offset, ms: Date.now() - t0, maxRssKb: process.resourceUsage().maxRSS }));
  `;
  const res = await execa(process.execPath, ['--input-type=module', '-e', script]);
  return JSON.parse(res.stdout) as { records: number; skipped: number; offset: number; ms: number; maxRssKb: number };
}

describe('bounds', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await scratchDir('fault-bounds');
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('a 1 GB transcript is tailed from its offset without being loaded (small peak RSS)', async () => {
    const file = path.join(dir, 'big.jsonl');
    const fh = await fs.open(file, 'w');
    // 1 GB of earlier history (sparse: one long blank run ending in a newline), then new records.
    await fh.truncate(GB - 1);
    await fh.write('\n', GB - 1);
    await fh.close();
    const tail = ['{"type":"user","message":{"role":"user","content":"new"}}', '{"type":"system","subtype":"turn_duration"}', '{"type":"last-prompt"}'];
    await fs.appendFile(file, tail.join('\n') + '\n');
    const fromOffset = await tailInChild(file, GB);
    const baseline = await tailInChild(path.join(dir, 'missing.jsonl'), 0);
    expect(fromOffset.records).toBe(3);
    expect(fromOffset.offset).toBe((await fs.stat(file)).size);
    expect(fromOffset.ms).toBeLessThan(1000);
    expect(fromOffset.maxRssKb - baseline.maxRssKb).toBeLessThan(32 * 1024);
    // Even a read from 0 (a 1 GB line of NULs) streams: memory stays bounded, the line is skipped.
    const fromZero = await tailInChild(file, 0);
    expect(fromZero.records).toBe(3);
    expect(fromZero.skipped).toBe(1);
    expect(fromZero.maxRssKb - baseline.maxRssKb).toBeLessThan(64 * 1024);
    recordFault({
      id: 'bound.transcript-1gb',
      area: 'bound',
      fault: 'a 1 GB transcript',
      how: 'sparse 1 GB file plus new records, tailed in a fresh process from the stored offset, and from 0',
      outcome: `from the offset: the 3 new records in ${fromOffset.ms} ms, peak RSS +${Math.round((fromOffset.maxRssKb - baseline.maxRssKb) / 1024)} MB; from 0: the 1 GB line streamed and skipped, peak RSS +${Math.round((fromZero.maxRssKb - baseline.maxRssKb) / 1024)} MB`,
      state: '-',
      test: FILE,
    });
  });
});

describe('--timeout on a hung CLI (real Claude Code)', () => {
  let suite: CliSuite;
  let handle = '';
  const cal = (args: string[]) => suite.cal(args);

  beforeAll(async () => {
    suite = await cliSuite('claude-code', { prefix: 'fault-timeout' });
    const run = await cal(['start', '--provider', 'claude-code', '--cwd', suite.work, 'Remember the codeword MAPLE.']);
    expect(run.code).toBe(0);
    handle = handleFromStderr(run.stderr) ?? '';
  });

  afterAll(async () => {
    await suite?.close();
  });

  it('ends with the timeout error (exit 14) and a consistent turn record; the session goes on', async () => {
    const before = (await cal(['inspect', handle, '--json'])).json;
    const t0 = Date.now();
    const run = await cal(['continue', handle, '--json', '--timeout', '3', 'Hang here [[cal:delay=60000]]']);
    const elapsed = Date.now() - t0;
    expect(run.code).toBe(14);
    expect(run.json.error.kind).toBe('timeout');
    expect(run.json.error.handle).toBe(handle);
    expect(elapsed).toBeLessThan(10_000);
    const view = (await cal(['inspect', handle, '--json'])).json;
    const turn = view.turns.at(-1);
    // The CLI took the message (it has its key) but has not ended it: the turn stays open for
    // recover, with the timeout recorded; the stored offset did not move past the open turn.
    expect(turn.status).toBe('running');
    expect(turn.turnKey).toMatch(/[0-9a-f-]{36}/);
    expect(turn.error).toMatchObject({ kind: 'timeout' });
    expect(turn.answer).toBeNull();
    expect(view.provider.transcript.offset).toBe(before.provider.transcript.offset);
    expect(view.events.filter((e: { turn?: string }) => e.turn === turn.id).map((e: { event: string }) => e.event)).toEqual(['running']);
    // The hung CLI is replaced: kill its pane; recover settles the open turn; the next continue
    // resumes natively.
    expect((await cal(['kill-tmux', handle])).code).toBe(0);
    const recover = await cal(['recover', '--json']);
    expect(recover.json.turns).toEqual([expect.objectContaining({ turn: turn.id, status: 'lost' })]);
    const next = await cal(['continue', handle, '--json', 'What was the codeword?']);
    expect(next.code).toBe(0);
    expect(next.json.turn.answer).toBe('The codeword was MAPLE.');
    const after = (await cal(['inspect', handle, '--json'])).json;
    const settled = after.turns.find((t: { id: string }) => t.id === turn.id);
    expect(settled.status).toBe('lost');
    recordFault({
      id: 'bound.timeout-hung-cli',
      area: 'bound',
      fault: 'the CLI hangs mid-turn (scripted model delays 60 s)',
      how: '`cal continue <h> --timeout 3` with `[[cal:delay=60000]]` (real Claude Code 2.1.328)',
      outcome: `exit 14 (timeout) after ${(elapsed / 1000).toFixed(1)} s; turn record: status running with its turnKey and error.kind timeout, offset unchanged; after kill-tmux, cal recover settles it ${settled.status} (exit ${recover.code}) and the next continue resumes natively (exit 0)`,
      state: 'handle valid',
      test: FILE,
    });
  });
});
