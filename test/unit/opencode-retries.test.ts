import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readLog, retriesIn } from '../../src/adapters/opencode/log.js';
import { MAX_ATTEMPTS, OpencodeTurnObserver } from '../../src/adapters/opencode/turn.js';
import { fixtureRecords } from '../support/fixtures.js';

/**
 * A model request OpenCode keeps retrying leaves nothing in its store; its log has one
 * `stream error` line an attempt (1.18.33, lines as measured). cal mirrors them as `retry` rows and
 * fails the turn at the MAX_ATTEMPTS-th attempt since its latest finished step.
 */
const SES = 'ses_db6be9927ffeDrK4dD3FqzclnM';
const line = (iso: string, over: { session?: string; small?: string; message?: string } = {}) =>
  `timestamp=${iso} level=ERROR run=e845fd3a message="${over.message ?? 'stream error'}" providerID=scripted modelID=scripted-model session.id=${over.session ?? SES} small=${over.small ?? 'false'} agent=build mode=primary error.error="AI_APICallError: Mock \\"internal\\" server error"`;

describe("OpenCode's log of failed attempts", () => {
  it("keeps a session's failed turn attempts, not its title request's, nor another session's or other lines", () => {
    const text = [
      'timestamp=2026-12-06T02:49:14.900Z level=INFO run=e845fd3a message=stream providerID=scripted session.id=' + SES + ' small=false',
      line('2026-12-06T02:49:14.945Z', { small: 'true' }),
      line('2026-12-06T02:49:15.111Z'),
      line('2026-12-06T02:49:15.200Z', { session: 'ses_other' }),
      line('2026-12-06T02:49:17.250Z'),
    ].join('\n');
    expect(retriesIn(text, SES)).toEqual([
      { kind: 'retry', at: Date.parse('2026-12-06T02:49:15.111Z'), error: 'AI_APICallError: Mock "internal" server error' },
      { kind: 'retry', at: Date.parse('2026-12-06T02:49:17.250Z'), error: 'AI_APICallError: Mock "internal" server error' },
    ]);
  });

  const dir = mkdtempSync(path.join(os.tmpdir(), 'cal-oc-log-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is read on from where the last read stopped, whole lines only, and from the start again when it shrank', async () => {
    const file = path.join(dir, 'opencode.log');
    expect(await readLog(file, null)).toEqual({ text: '', offset: 0 });
    writeFileSync(file, 'one\ntwo\nthr');
    const first = await readLog(file, null);
    expect(first).toEqual({ text: 'one\ntwo\n', offset: 8 });
    appendFileSync(file, 'ee\n');
    expect(await readLog(file, first.offset)).toEqual({ text: 'three\n', offset: 14 });
    writeFileSync(file, 'new\n');
    expect(await readLog(file, 14)).toEqual({ text: 'new\n', offset: 4 });
  });
});

describe('a turn whose model keeps failing', () => {
  const session = fixtureRecords('opencode', 'tmux-session');
  // The first turn as OpenCode holds it while it retries: the prompt and an unfinished reply.
  const reply = session.findIndex((r) => r.kind === 'message' && JSON.parse(r.data).role === 'assistant');
  const prompt = session.find((r) => r.kind === 'message' && JSON.parse(r.data).role === 'user');
  const promptAt: number = JSON.parse(prompt.data).time.created;
  const retrying = session.slice(0, reply + 2);
  const retry = (at: number) => ({ kind: 'retry', at, error: 'AI_APICallError: Mock internal server error' });
  const observe = (records: unknown[]) => {
    const obs = new OpencodeTurnObserver('Remember the codeword KIWI.');
    for (const r of records) obs.feed(r);
    return obs;
  };

  it(`runs on while OpenCode retries, and fails at the ${MAX_ATTEMPTS}th failed attempt with OpenCode's error`, () => {
    const attempts = [1, 2, 3].map((n) => retry(promptAt + n * 1000));
    expect(observe([...retrying, ...attempts.slice(0, MAX_ATTEMPTS - 1)]).observation).toMatchObject({ phase: 'running' });
    const failed = observe([...retrying, ...attempts.slice(0, MAX_ATTEMPTS)]);
    expect(failed.observation).toMatchObject({ phase: 'ended', status: 'failed', answer: null, error: expect.stringContaining('AI_APICallError: Mock internal server error') });
    expect(failed.unknownRecords).toBe(0);
  });

  it('counts no attempt logged before the prompt or before a step that finished', () => {
    const before = [1, 2, 3].map((n) => retry(promptAt - n * 1000));
    expect(observe([...retrying, ...before]).observation).toMatchObject({ phase: 'running' });
    // The whole turn, finished: attempts before its step finished are history.
    expect(observe([...session, ...[1, 2, 3].map((n) => retry(promptAt + n))]).observation).toMatchObject({ phase: 'ended', status: 'completed' });
  });
});
