import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleFromStderr } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';

/**
 * Issue 42, item 2 acceptance (real Codex, real tmux): `continue --detach` returns in under a
 * second with the handle and turn ids once the message is sent; `cal inspect --json` shows the
 * turn in flight; `cal wait` prints the JSON a blocking continue prints, with the turn's exit code;
 * the message reaches the model once. A second message meanwhile is busy, as without --detach.
 */
describe('detached turns (real Codex, real tmux)', () => {
  let suite: CliSuite;

  beforeAll(async () => {
    suite = await cliSuite('codex', { prefix: 'detach' });
  });

  afterAll(async () => {
    await suite?.close();
  });

  const timesSeen = (message: string) => suite.server.turnRequests().filter((r) => r.lastUserMessage?.includes(message)).length;

  it('continue --detach returns at once; inspect shows the turn in flight; wait prints what a blocking continue prints', async () => {
    const started = await suite.cal(['start', '--provider', 'codex', '--cwd', suite.work, 'Remember the codeword KILO.']);
    expect(started.code, started.stderr).toBe(0);
    const h = handleFromStderr(started.stderr)!;

    const message = 'What was the codeword? [[cal:delay=4000]]';
    const t0 = Date.now();
    const detached = await suite.cal(['continue', h, '--detach', '--json', message]);
    const ms = Date.now() - t0;
    expect(detached.code, detached.stdout + detached.stderr).toBe(0);
    expect(ms).toBeLessThan(1000);
    expect(detached.json).toMatchObject({ handle: h, turn: { id: expect.any(String), status: 'sending' } });
    const turnId = detached.json.turn.id;

    const view = await suite.inspect(h);
    const inFlight = view.turns.find((t: any) => t.id === turnId);
    expect(['sending', 'running']).toContain(inFlight.status);
    // One continuation per handle: a second message while the turn runs is busy, detached or not.
    const second = await suite.cal(['continue', h, '--detach', 'Another message.']);
    expect(second.code).toBe(5);
    expect(second.stderr).toMatch(/^cal: busy: /m);

    const waited = await suite.cal(['wait', h, '--turn', turnId, '--json']);
    expect(waited.code, waited.stdout + waited.stderr).toBe(0);
    expect(waited.json).toMatchObject({ handle: h, turn: { id: turnId, status: 'completed', answer: 'The codeword was KILO.' } });
    expect(timesSeen(message)).toBe(1);
    expect(timesSeen('Another message.')).toBe(0);
    expect((await suite.cal(['show', h, '--turn', turnId, '--json'])).json).toEqual(waited.json);

    // The same JSON as a blocking continue: wait on a turn a blocking continue ran prints its object.
    const blocking = await suite.cal(['continue', h, '--json', 'What was the codeword?']);
    expect(blocking.code).toBe(0);
    const again = await suite.cal(['wait', h, '--json']);
    expect(again.json).toEqual(blocking.json);

    // Text: the turn id on stdout, the handle on stderr; wait prints the answer alone.
    const text = await suite.cal(['continue', h, '--detach', 'What was the codeword? [[cal:delay=1500]]']);
    expect(text.code).toBe(0);
    expect(text.stderr).toBe(`handle: ${h}`);
    const answer = await suite.cal(['wait', h, '--turn', text.stdout.trim()]);
    expect(answer.code).toBe(0);
    expect(answer.stdout).toBe('The codeword was KILO.');
  }, 300_000);

  it('wait: an unknown turn is not_found (3); --timeout gives up with timeout (14) while the turn goes on', async () => {
    const started = await suite.cal(['start', '--provider', 'codex', '--cwd', suite.work, 'Remember the codeword LIMA.']);
    const h = handleFromStderr(started.stderr)!;
    expect((await suite.cal(['wait', h, '--turn', 'nosuchturn'])).code).toBe(3);
    const detached = await suite.cal(['continue', h, '--detach', '--json', 'What was the codeword? [[cal:delay=5000]]']);
    expect(detached.code).toBe(0);
    const early = await suite.cal(['wait', h, '--timeout', '0.5', '--json']);
    expect(early.code).toBe(14);
    expect(early.json.error.kind).toBe('timeout');
    const done = await suite.cal(['wait', h, '--json']);
    expect(done.code).toBe(0);
    expect(done.json.turn.answer).toBe('The codeword was LIMA.');
  }, 300_000);
});
