import { describe, expect, it } from 'vitest';
import { runProviderTurn } from '../../src/engine/decision.js';
import type { CalError } from '../../src/errors.js';
import { kindOf } from '../support/errors.js';
import { fakeWorld, providerHandle } from '../support/fake-engine.js';

/**
 * Issue 50, item 9: a CLI that records each prompt as it takes it (Claude Code, Copilot, Pi) and
 * records nothing for a sent message cannot record the turn (off its prompt, or its file cannot
 * be written): the turn fails typed within the adapter's bound, not at the timeout. Releases that
 * record a fresh session's prompt only with the first reply (Pi below 0.99.1) get no bound at a
 * fresh launch, where a slow first reply would look the same. A CLI that shows its prompt, drawn
 * and empty, after a launch that handed it the message is late (a loaded machine), not off it.
 */
describe('the bound on an unrecorded prompt, by release', () => {
  const lateBelow2 = (version: string) => Number(version.split('.')[0]) < 2;
  const handleOf = (version: string) => providerHandle({ cli: { ...providerHandle().cli!, version } });

  it('a release that records a fresh prompt only with its reply waits at its fresh launch', async () => {
    const w = fakeWorld({ promptRecordedWithinMs: 100, recordsFreshPromptLate: lateBelow2 });
    w.cli.behaviour = () => 'ignore';
    expect(await kindOf(runProviderTurn(w.request(handleOf('1.0.0'), 'hello', { timeoutMs: 1500 })))).toBe('timeout');
  });

  it('a release that records it at once fails typed at its fresh launch, within seconds', async () => {
    const w = fakeWorld({ promptRecordedWithinMs: 100, recordsFreshPromptLate: lateBelow2 });
    w.cli.behaviour = () => 'ignore';
    w.tmux.dialog = ['Error: cannot write the session file'];
    const t0 = Date.now();
    expect(await kindOf(runProviderTurn(w.request(handleOf('2.0.0'), 'hello', { timeoutMs: 30_000 })))).toBe('turn_failed');
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('a CLI that records prompts at once but does not take the message is off its prompt (a dialog): turn_failed, not a timeout', async () => {
    const w = fakeWorld({ promptRecordedWithinMs: 300 });
    w.cli.behaviour = () => 'ignore';
    w.tmux.dialog = ['Do you trust the files in this folder?', '  1. Yes, proceed'];
    const t0 = Date.now();
    const err = await runProviderTurn(w.request(providerHandle(), 'hello', { timeoutMs: 30_000 })).catch((e: CalError) => e);
    expect((err as CalError).kind).toBe('turn_failed');
    expect((err as CalError).message).toMatch(/not at its prompt \(a dialog is open\?\): fake screen/);
    expect(Date.now() - t0).toBeLessThan(5000);
    // A CLI that records the prompt only with its reply declares no bound: a slow turn is not a dialog.
    const slow = fakeWorld();
    slow.cli.behaviour = () => 'ignore';
    expect(((await runProviderTurn(slow.request(providerHandle(), 'hello', { timeoutMs: 1500 })).catch((e: CalError) => e)) as CalError).kind).toBe('timeout');
  });

  it('a launched CLI at its prompt (box drawn, empty) with the message unrecorded is late, not behind a dialog: it gets three times the bound, then unconfirmed', async () => {
    // CI: one of 16 Claude Code starts at once showed its empty prompt at the 60 s bound and
    // failed "not at its prompt (a dialog is open?)"; the message was in its argv, still to be submitted.
    const late = fakeWorld({ promptRecordedWithinMs: 300 });
    late.cli.behaviour = (m, p) => {
      setTimeout(() => late.cli.write(late.cli.sessionOf(p), [{ t: 'user', text: m, key: 'k' }, { t: 'answer', text: 'late' }, { t: 'end' }]), 1500);
      return 'ignore';
    };
    expect((await runProviderTurn(late.request(providerHandle(), 'hello', { timeoutMs: 30_000 }))).outcome).toMatchObject({ status: 'completed', answer: 'late' });
    const never = fakeWorld({ promptRecordedWithinMs: 300 });
    never.cli.behaviour = () => 'ignore';
    const t0 = Date.now();
    const err = (await runProviderTurn(never.request(providerHandle(), 'hello', { timeoutMs: 30_000 })).catch((e: CalError) => e)) as CalError;
    expect([err.kind, err.message]).toEqual(['unconfirmed', expect.stringMatching(/sits at its prompt but did not record the message within \d+s of its launch: it may still take it/)]);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
    expect(Date.now() - t0).toBeLessThan(5000);
  });
});
