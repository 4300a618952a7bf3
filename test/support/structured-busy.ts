import fs from 'node:fs/promises';
import { expect } from 'vitest';
import type { ModelServer } from '../../src/model/server.js';
import { eventsOf, type CalRun } from './cal.js';
import { processExited } from '../../src/util/process-identity.js';
import { until } from './structured-fakes.js';

/** One structured session of a CLI's end-to-end suite, as the busy scenario needs it. */
export interface StructuredSession {
  cal(args: string[]): Promise<CalRun>;
  inspect(): Promise<any>;
  server: ModelServer;
  handle: string;
  /** The codeword the session's first turn asked the model to remember. */
  codeword: string;
  timeout: string[];
}

/**
 * One continuation per handle on the structured transport: while a turn runs, a second
 * `cal continue` is busy (5) at once and its message reaches neither the model nor the CLI's own
 * transcript; one with `--wait` waits in line for the lock and runs as its own turn afterwards,
 * its request carrying the running turn once.
 */
export async function busyWhileStructuredTurnRuns(s: StructuredSession): Promise<void> {
  const running = 'Slow structured turn [[cal:delay=8000]]';
  const refused = 'Refused while the slow turn runs.';
  const queued = 'What was the codeword? (queued behind the slow turn)';
  s.server.clearLog();
  const holder = s.cal(['continue', s.handle, '--json', ...s.timeout, running]);
  await until(() => s.server.turnRequests().some((r) => r.lastUserMessage === running), 'the slow turn to reach the model');

  const askedAt = Date.now();
  const busy = await s.cal(['continue', s.handle, '--json', ...s.timeout, refused]);
  const busyMs = Date.now() - askedAt;
  expect(busy.code, busy.stderr).toBe(5);
  expect(busy.json.error).toMatchObject({ kind: 'busy', handle: s.handle });
  expect(busyMs, 'busy came at once, not after the running turn').toBeLessThan(4000);

  const waiter = s.cal(['continue', s.handle, '--wait=60', '--events', '--json', ...s.timeout, queued]);
  const [first, second] = await Promise.all([holder, waiter]);
  expect(first.code, first.stderr).toBe(0);
  expect(first.json.turn).toMatchObject({ status: 'completed', answer: 'Received: Slow structured turn' });
  expect(second.code, second.stderr).toBe(0);
  expect(second.json.turn).toMatchObject({ status: 'completed', answer: `The codeword was ${s.codeword}.` });
  expect(eventsOf(second), 'the waiter waited for the lock').toContain('waiting_for_lock');

  // The model: the slow turn, then the queued one carrying it once; the refused message never.
  const turns = s.server.turnRequests();
  expect(turns.map((t) => t.lastUserMessage)).toEqual([running, queued]);
  expect(turns[1]!.userMessages.filter((m) => m === running)).toHaveLength(1);
  expect(turns.some((t) => t.userMessages.some((m) => m.includes(refused)))).toBe(false);
  // Nor the CLI's own transcript. (Claude: the claude -p the busy caller started ahead of its lock
  // is discarded unsent; one left running would end on its empty stdin as well, so this pins the
  // outcome, not the discard.)
  const view = await s.inspect();
  expect(await fs.readFile(view.provider.transcript.path, 'utf8')).not.toContain(refused);
  // A refusal is no turn (issue 41): the handle's turn list has no record of it.
  expect(view.turns.find((t: { message: string }) => t.message === refused)).toBeUndefined();
}

/**
 * Structured turns chained back to back: each `cal continue` returns on the CLI's end record
 * while its process may still be finishing (the handle then names that process until the next
 * turn), and every resume carries each earlier turn once and one new message. `cli` names the
 * process in the failure messages (`claude -p`, `codex exec`, `gemini -p`).
 */
export async function chainedStructuredTurns(s: Omit<StructuredSession, 'codeword'>, cli: string): Promise<void> {
  s.server.clearLog();
  const messages = ['Chained one.', 'Chained two.', 'Chained three.'];
  const returnedBeforeExit: boolean[] = [];
  for (const m of messages) {
    const run = await s.cal(['continue', s.handle, '--json', ...s.timeout, m]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn).toMatchObject({ status: 'completed', answer: `Received: ${m}` });
    returnedBeforeExit.push(((await s.inspect()).provider.cliProcess ?? null) !== null);
  }
  expect(returnedBeforeExit, `cal returned on the end record before ${cli} exited, at least once`).toContain(true);
  const turns = s.server.turnRequests();
  expect(turns.map((t) => t.lastUserMessage)).toEqual(messages);
  for (let k = 1; k < turns.length; k++) expect(turns[k]!.userMessages).toEqual([...turns[k - 1]!.userMessages, messages[k]]);
  // The CLI of the last turn has exited, or is named on the handle while it finishes (a zombie
  // counts as exited: an init that reaps late keeps it in the table).
  const proc = (await s.inspect()).provider.cliProcess as { pid: number } | null;
  if (proc) await until(() => processExited(proc.pid), `the last ${cli} to exit`);
}
