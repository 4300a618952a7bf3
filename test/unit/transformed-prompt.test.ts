import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProviderTurn } from '../../src/engine/decision.js';
import type { CalError } from '../../src/errors.js';
import { exitCodes } from '../../src/errors.js';
import { wellFormedMessage } from '../../src/util/well-formed.js';
import type { AgentSessions } from '../../src/sessions/agent-sessions.js';
import type { FakeCli } from '../support/fake-engine.js';
import { fakeAdapter, fakeSessions, fakeWorld, providerHandle } from '../support/fake-engine.js';
import { removeScratch } from '../support/scratch.js';

/**
 * Issue 40, item 3: which prompt record is the turn's message (the rule in
 * adapters/turn-observer.ts isOurPrompt), with a fake CLI. A CLI may store the message it was
 * sent transformed (Claude Code and Codex: a pasted path to an image becomes `[Image #1]` and the
 * image; Gemini: a path to a file becomes the file). The first prompt it records after cal's send
 * is the message; only when it wrote nothing after the send was the message not taken. (A bound
 * of 700 ms: a launch's is three times it, counted from a send time 1 s back.)
 */
const now = () => new Date().toISOString();
const later = () => new Date(Date.now() + 1).toISOString();

describe('the first prompt the CLI records after the send is the message, whatever its text', () => {
  it('a pasted message the CLI stored transformed is taken and answered (before: turn_failed "not taken")', async () => {
    const w = fakeWorld({ promptRecordedWithinMs: 700 });
    w.cli.behaviour = () => [{ t: 'user', text: '[Image #1]', key: 'k', timestamp: now() }, { t: 'answer', text: 'an image' }, { t: 'end' }];
    const { outcome } = await runProviderTurn(w.request(providerHandle(), "'/tmp/shot.png'"));
    expect(outcome).toMatchObject({ status: 'completed', answer: 'an image', turnKey: 'k' });
  });

  it('a prompt recorded before the send (by its own time) is not the message: not taken, turn_failed', async () => {
    const w = fakeWorld({ promptRecordedWithinMs: 700 });
    const old = new Date(Date.now() - 60_000).toISOString();
    w.cli.behaviour = () => [{ t: 'user', text: 'an earlier prompt', key: 'k0', timestamp: old }, { t: 'answer', text: 'old', timestamp: old }, { t: 'end', timestamp: old }];
    // Off its prompt (a CLI at its empty prompt after a launch is only late: prompt-bound.test.ts).
    w.tmux.dialog = ['a dialog'];
    const err = (await runProviderTurn(w.request(providerHandle(), 'hello', { timeoutMs: 30_000 })).catch((e: CalError) => e)) as CalError;
    expect(err.kind).toBe('turn_failed');
  });

  it('a prompt record without a time of its own is matched by its text only', async () => {
    const w = fakeWorld({ promptRecordedWithinMs: 700 });
    // (The fake CLI stamps every record with the time it writes it, unless the record says otherwise.)
    w.cli.behaviour = () => [{ t: 'user', text: '[Image #1]', key: 'k', timestamp: null }, { t: 'answer', text: 'x', timestamp: null }, { t: 'end', timestamp: null }];
    // Off its prompt (a CLI at its empty prompt after a launch is only late: prompt-bound.test.ts).
    w.tmux.dialog = ['a dialog'];
    const err = (await runProviderTurn(w.request(providerHandle(), "'/tmp/shot.png'", { timeoutMs: 30_000 })).catch((e: CalError) => e)) as CalError;
    expect(err.kind).toBe('turn_failed');
  });

  it('records after the send but no prompt: sent, outcome unknown (unconfirmed, exit 19), never "not taken"', async () => {
    const w = fakeWorld({ promptRecordedWithinMs: 700 });
    w.cli.behaviour = () => [{ t: 'something-new', timestamp: later() }];
    const t0 = Date.now();
    const err = (await runProviderTurn(w.request(providerHandle(), 'hello', { timeoutMs: 30_000 })).catch((e: CalError) => e)) as CalError;
    expect(err.kind).toBe('unconfirmed');
    expect(err.exitCode).toBe(19);
    expect(exitCodes.unconfirmed).toBe(19);
    expect(err.message).toMatch(/may have been taken; do not send it again/);
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('a turn followed again (nothing sent now) takes only its own text: no other prompt is claimed', () => {
    const adapter = fakeAdapter({} as FakeCli);
    const sentAt = new Date(Date.now() - 1000);
    const again = adapter.observeTurn('hello', sentAt);
    again.feed({ t: 'user', text: '[Image #1]', key: 'k', timestamp: now() });
    expect(again.observation.phase).toBe('waiting');
    const sent = adapter.observeTurn('hello', sentAt, { firstPromptAfterSend: true });
    sent.feed({ t: 'user', text: '[Image #1]', key: 'k', timestamp: now() });
    expect(sent.observation).toMatchObject({ phase: 'running', turnKey: 'k' });
  });
});

describe('a message that is not well-formed UTF-16', () => {
  let root: string;
  let cli: FakeCli;
  let sessions: AgentSessions;

  beforeAll(async () => {
    ({ root, cli, sessions } = await fakeSessions('lone-surrogate'));
  });

  afterAll(async () => {
    await removeScratch(root);
  });

  it('lone surrogates become U+FFFD; pairs and other text stay as they are', () => {
    expect(wellFormedMessage('lone \uD800 surrogate hi')).toBe('lone \uFFFD surrogate hi');
    expect(wellFormedMessage('\uDC00\uD83D')).toBe('\uFFFD\uFFFD');
    expect(wellFormedMessage('pair 😀 and \uD83D\uDE00\uDE00')).toBe('pair 😀 and 😀\uFFFD');
  });

  it('is sent and recorded as U+FFFD by every session call, so the CLI record matches what cal sent', async () => {
    cli.behaviour = (m) => [{ t: 'user', text: m, key: `k-${m.length}` }, { t: 'answer', text: `got ${m}` }, { t: 'end' }];
    const first = await sessions.start({ provider: 'claude-code', message: 'first \uD800', env: {}, cwd: root });
    expect(first.turn).toMatchObject({ status: 'completed', message: 'first \uFFFD', answer: 'got first \uFFFD' });
    const next = await sessions.continue({ ref: first.handle.id, message: 'lone \uDFFF surrogate hi', env: {} });
    expect(next.turn).toMatchObject({ status: 'completed', message: 'lone \uFFFD surrogate hi', answer: 'got lone \uFFFD surrogate hi' });
    expect(cli.received).toEqual(['first \uFFFD', 'lone \uFFFD surrogate hi']);
  });
});
