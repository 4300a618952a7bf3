import fs from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleFromStderr } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';

/**
 * Issue 9: `--stream` on the real Claude Code binary in real tmux against the scripted model.
 * A slow tool call (`[[cal:shell=sleep 3; …]]`) makes progress visible before the turn ends:
 * Claude Code writes one transcript record per content block, so the tool call record arrives
 * seconds before the closing text and `turn_duration`. Earlier turns already sit in the same
 * transcript and must never show up.
 */
interface Line {
  at: number;
  text: string;
}

interface TimedRun {
  code: number;
  stdout: Line[];
  stderr: Line[];
  endedAt: number;
}

/** Runs the built cal, noting when each output line arrived. */
function runTimed(suite: CliSuite, args: string[]): Promise<TimedRun> {
  return new Promise((resolve, reject) => {
    const { child } = suite.spawnCal(args);
    const stdout: Line[] = [];
    const stderr: Line[] = [];
    createInterface({ input: child.stdout! }).on('line', (text) => stdout.push({ at: Date.now(), text }));
    createInterface({ input: child.stderr! }).on('line', (text) => stderr.push({ at: Date.now(), text }));
    const timer = setTimeout(() => child.kill('SIGTERM'), 150_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr, endedAt: Date.now() });
    });
  });
}

describe('--stream with Claude Code, end to end', () => {
  let suite: CliSuite;
  let work: string;
  let handle = '';

  beforeAll(async () => {
    suite = await cliSuite('claude-code', { prefix: 'stream-e2e' });
    ({ work } = suite);
    // The scripted model's shell directive makes Claude call Bash: allow it without a prompt
    // (in this throwaway HOME only).
    const settings = path.join(suite.configDir, 'settings.json');
    await fs.mkdir(path.dirname(settings), { recursive: true });
    await fs.writeFile(settings, JSON.stringify({ permissions: { allow: ['Bash'] }, skipDangerousModePermissionPrompt: true }), { mode: 0o600 });
  });

  afterAll(async () => {
    await suite?.close();
  });

  it('start --stream --json streams the first turn (tool call, its result, the text), then the final object', async () => {
    const run = await runTimed(suite, ['start', '--provider', 'claude-code', '--cwd', work, '--stream', '--json', 'Earlier turn [[cal:shell=echo EARLIER-OUT]]']);
    expect(run.code).toBe(0);
    const lines = run.stdout.map((l) => JSON.parse(l.text));
    const final = lines.at(-1);
    expect(final.turn).toMatchObject({ status: 'completed', answer: 'Tool finished: EARLIER-OUT' });
    handle = final.handle;
    expect(lines.slice(0, -1)).toEqual([
      expect.objectContaining({ type: 'tool', phase: 'call', kind: 'shell', name: 'echo EARLIER-OUT' }),
      expect.objectContaining({ type: 'tool', phase: 'result', status: 'completed', output: expect.stringContaining('EARLIER-OUT') }),
      { type: 'text', text: 'Tool finished: EARLIER-OUT' },
    ]);
  });

  it('continue --stream --json: the slow tool call is streamed seconds before the turn ends, nothing from the earlier turn', async () => {
    const run = await runTimed(suite, ['continue', handle, '--stream', '--json', 'Now the slow one [[cal:shell=sleep 3; echo LATER-OUT]]']);
    expect(run.code).toBe(0);
    const events = run.stdout.map((l) => ({ at: l.at, value: JSON.parse(l.text) }));
    const final = events.at(-1)!;
    expect(final.value.turn).toMatchObject({ status: 'completed', answer: 'Tool finished: LATER-OUT' });
    const streamed = events.slice(0, -1).map((e) => e.value);
    expect(streamed).toEqual([
      expect.objectContaining({ type: 'tool', phase: 'call', kind: 'shell', name: 'sleep 3; echo LATER-OUT' }),
      expect.objectContaining({ type: 'tool', phase: 'result', status: 'completed', output: expect.stringContaining('LATER-OUT') }),
      { type: 'text', text: 'Tool finished: LATER-OUT' },
    ]);
    // The call was on stdout while the tool was still sleeping, well before the final object.
    const call = events[0]!;
    expect(final.at - call.at).toBeGreaterThanOrEqual(2000);
    expect(run.stdout.map((l) => l.text).join('\n')).not.toMatch(/EARLIER/);
  });

  it('after kill-tmux, continue --stream (plain) resumes natively and streams only the new turn', async () => {
    expect((await suite.cal(['kill-tmux', handle])).code).toBe(0);
    const run = await runTimed(suite, ['continue', handle, '--stream', 'Resumed one [[cal:shell=sleep 3; echo RESUMED-OUT]]']);
    expect(run.code).toBe(0);
    // stdout holds exactly this turn's text, printed once (not again as the final answer).
    expect(run.stdout.map((l) => l.text)).toEqual(['Tool finished: RESUMED-OUT']);
    // Tool activity goes to stderr, one line per event, before the end; then the handle line.
    const err = run.stderr.map((l) => l.text);
    expect(err).toEqual(['tool: shell sleep 3; echo RESUMED-OUT (running)', expect.stringMatching(/^tool: shell sleep 3; echo RESUMED-OUT → completed: RESUMED-OUT/), `handle: ${handle}`]);
    expect(run.endedAt - run.stderr[0]!.at).toBeGreaterThanOrEqual(2000);
    expect([...err, ...run.stdout.map((l) => l.text)].join('\n')).not.toMatch(/EARLIER|LATER/);
    expect(handleFromStderr(err.join('\n'))).toBe(handle);
    const view = await suite.inspect(handle);
    expect(view.panes).toHaveLength(2);
    expect(view.turns.map((t: { status: string }) => t.status)).toEqual(['completed', 'completed', 'completed']);
  });

  it('without --stream nothing is streamed: one JSON object, and no spinner output when stderr is not a terminal', async () => {
    const run = await suite.cal(['continue', handle, '--json', 'Quiet [[cal:shell=echo QUIET-OUT]]']);
    expect(run.code).toBe(0);
    expect(run.stdout.trim().split('\n')).toHaveLength(1);
    expect(run.json.turn.answer).toBe('Tool finished: QUIET-OUT');
    expect(run.stderr).toBe('');
    const plain = await suite.cal(['continue', handle, 'Quiet again [[cal:shell=echo QUIET-TWO]]']);
    // (execa drops the final newline)
    expect(plain.stdout).toBe('Tool finished: QUIET-TWO');
    expect(plain.stderr).toBe(`handle: ${handle}`);
  });
  it('the same message sent again after a restart and a native resume streams the new turn only (the boundary is durable)', async () => {
    // Each run of the command prints a different number, so the two turns are told apart even
    // though their messages are identical (an observer reading from offset 0 would match the first).
    const message = 'Same words twice [[cal:shell=sleep 3; date +%s%N]]';
    const first = await suite.cal(['continue', handle, '--json', '--timeout', '60', message]);
    expect(first.code).toBe(0);
    const firstNumber = /\d{12,}/.exec(first.json.turn.answer)?.[0];
    expect(firstNumber).toBeDefined();
    expect((await suite.cal(['kill-tmux', handle])).code).toBe(0);
    const run = await runTimed(suite, ['continue', handle, '--stream', '--json', '--timeout', '60', message]);
    expect(run.code).toBe(0);
    const events = run.stdout.map((l) => ({ at: l.at, value: JSON.parse(l.text) }));
    const final = events.at(-1)!;
    const secondNumber = /\d{12,}/.exec(final.value.turn.answer)?.[0];
    expect(secondNumber).toBeDefined();
    expect(secondNumber).not.toBe(firstNumber);
    const streamed = events.slice(0, -1).map((e) => e.value);
    expect(streamed.filter((e) => e.type === 'tool' && e.phase === 'call')).toHaveLength(1);
    expect(streamed.find((e) => e.phase === 'result')?.output).toContain(secondNumber);
    expect(streamed.filter((e) => e.type === 'text')).toEqual([{ type: 'text', text: final.value.turn.answer }]);
    expect(JSON.stringify(streamed)).not.toContain(firstNumber);
    expect(final.at - events[0]!.at).toBeGreaterThanOrEqual(2000);
  });
});
