import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readPlan } from '../../src/workflow/plan.js';

/** Issue 43: a plan with a typo names the key and the keys allowed there, at every level. */
const dir = mkdtempSync(path.join(os.tmpdir(), 'cal-plan-keys-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function planError(yaml: string): Promise<string> {
  const file = path.join(dir, `plan-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, yaml);
  try {
    await readPlan(file);
  } catch (err) {
    return (err as Error).message.replace(`plan ${file}: `, '');
  }
  throw new Error('the plan was accepted');
}

const session = 'session:\n  provider: pi\n';

describe('a plan with an unknown key', () => {
  it('in a phase: names it and the phase keys', async () => {
    expect(await planError(`version: 1\n${session}phases:\n  - id: one\n    mesage: hi\n`)).toBe(
      'phases.0: unknown key "mesage"; the keys allowed here: id, message, lock, timeout, command, idempotent',
    );
  });

  it('in a later phase, at the top and in the session', async () => {
    expect(await planError(`version: 1\n${session}phases:\n  - id: one\n    message: hi\n  - id: two\n    comand: make\n`)).toMatch(/^phases\.1: unknown key "comand"; /);
    expect(await planError(`version: 1\n${session}phase:\n  - id: one\n    message: hi\n`)).toBe(
      '(root): unknown key "phase"; the keys allowed here: version, name, session, phases',
    );
    expect(await planError(`version: 1\nsession:\n  provider: pi\n  modle: x\nphases:\n  - id: one\n    message: hi\n`)).toBe(
      'session: unknown key "modle"; the keys allowed here: provider, name, cwd, model, transport, systemPrompt, mcpConfig, cliPath, handle',
    );
  });

  it('a phase mixing both kinds is still refused (strict objects), and a good plan is read', async () => {
    expect(await planError(`version: 1\n${session}phases:\n  - id: one\n    message: hi\n    idempotent: true\n`)).toMatch(/^phases\.0: /);
    const file = path.join(dir, 'good.yaml');
    writeFileSync(file, `version: 1\n${session}phases:\n  - id: one\n    message: hi\n  - id: two\n    command: [make, test]\n`);
    expect((await readPlan(file)).phases.map((p) => p.id)).toEqual(['one', 'two']);
  });
});
