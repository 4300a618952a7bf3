import { readdirSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CalError, openSessions, type Sessions } from '../../src/index.js';
import { scratchDir } from '../support/cal.js';
import { removeScratch } from '../support/scratch.js';

/**
 * Issue 40, item 11: every option of a library call is checked before anything is recorded or
 * sent. A negative, NaN or infinite timeout, a provider or transport named after Object's
 * prototype, a wrong type anywhere: a CalError (usage) and an empty state directory.
 */
describe('library options are validated before anything is recorded', () => {
  let root: string;
  let state: string;
  let sessions: Sessions;

  beforeAll(async () => {
    root = await scratchDir('lib-options');
    state = path.join(root, 'state');
    // No CLI on PATH: nothing could run anyway, and the check must come before looking for one.
    sessions = await openSessions({ stateDir: state, env: { HOME: root, PATH: path.join(root, 'empty') } });
  });
  afterAll(async () => removeScratch(root));

  const recorded = () => [...readdirSync(path.join(state, 'handles')), ...readdirSync(path.join(state, 'turns'))];

  const protoNames = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'prototype', 'valueOf'];
  const badNumber = fc.oneof(fc.constantFrom(-1, 0, -0, NaN, Infinity, -Infinity, Number.MIN_SAFE_INTEGER), fc.double({ max: 0 }), fc.string() as fc.Arbitrary<unknown>, fc.constant(null), fc.constant({}));
  const badName = fc.oneof(fc.constantFrom(...protoNames), fc.string().filter((s) => !/^(claude-code|codex|gemini|pi|cursor|agy|anthropic|openai|tmux|structured|api|default|read-only|accept-edits|bypass)$/.test(s)), fc.constant(42 as unknown), fc.constant(null as unknown));
  const badText = fc.oneof(fc.integer() as fc.Arbitrary<unknown>, fc.constant(null), fc.constant({}), fc.constant([]), fc.boolean());
  const badFn = fc.oneof(fc.string() as fc.Arbitrary<unknown>, fc.constant(1), fc.constant({}));

  /** One option spoiled at a time, over the shapes of start(), continue() and ask(). */
  const spoiled = fc.oneof(
    fc.record({ key: fc.constant('timeoutSeconds'), value: badNumber }),
    fc.record({ key: fc.constantFrom('provider', 'transport', 'toolPolicy'), value: badName }),
    fc.record({ key: fc.constantFrom('cwd', 'model', 'systemPrompt', 'mcpConfig', 'name', 'cliPath'), value: badText }),
    fc.record({ key: fc.constantFrom('onEvent', 'onProgress', 'signal'), value: badFn }),
    fc.record({ key: fc.constant('replace'), value: fc.oneof(fc.string() as fc.Arbitrary<unknown>, fc.constant(1)) }),
    fc.record({ key: fc.constant('wait'), value: badNumber.filter((v) => typeof v !== 'boolean') }),
  );

  const expectUsage = async (call: Promise<unknown>) => {
    const err = await call.then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(CalError);
    expect((err as CalError).kind).toBe('usage');
  };

  it('start(), continue() and ask() refuse each spoiled option with usage, and record nothing', async () => {
    await fc.assert(
      fc.asyncProperty(spoiled, fc.constantFrom('start', 'continue', 'ask'), async ({ key, value }, call) => {
        if (call === 'start' && key === 'wait') return;
        if (call === 'continue' && ['provider', 'name', 'cliPath', 'replace'].includes(key)) return;
        if (call === 'ask' && key === 'replace') return;
        const bad = { [key]: value };
        if (call === 'start') await expectUsage(sessions.start({ provider: 'claude-code', message: 'hi', cwd: root, ...bad } as never));
        if (call === 'continue') await expectUsage(sessions.continue('abcdef12', 'hi', bad as never));
        if (call === 'ask') await expectUsage(sessions.ask({ provider: 'claude-code', messages: [{ role: 'user', content: 'hi' }], ...bad } as never));
        expect(recorded()).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it("the issue's own cases: timeoutSeconds -1 / NaN / Infinity, provider '__proto__', transport 'constructor'", async () => {
    for (const bad of [{ timeoutSeconds: -1 }, { timeoutSeconds: NaN }, { timeoutSeconds: Infinity }, { provider: '__proto__' }, { transport: 'constructor' }, { provider: 'constructor' }, { transport: '__proto__' }]) {
      await expectUsage(sessions.start({ provider: 'claude-code', message: 'hi', cwd: root, ...bad } as never));
    }
    await expectUsage(sessions.start(null as never));
    expect(recorded()).toEqual([]);
  });
});
