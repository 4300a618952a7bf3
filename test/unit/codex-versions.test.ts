import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CodexTurnObserver, classifyRecord } from '../../src/adapters/codex/rollout.js';
import { readRolloutHead } from '../../src/adapters/codex/sessions.js';
import { repoRoot } from '../support/clis.js';

/**
 * The Codex rollout across the version matrix: rollouts recorded from real releases
 * (fixtures/codex-<version>-tui-kill-resume.rollout.jsonl: remember, paste, kill, resume, recall).
 */
function records(version: string): unknown[] {
  return readFileSync(path.join(repoRoot, 'fixtures', `codex-${version}-tui-kill-resume.rollout.jsonl`), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

function observe(version: string, message: string) {
  const o = new CodexTurnObserver(message);
  for (const r of records(version)) o.feed(r);
  return o.observation;
}

const turns = [
  { message: 'Remember the codeword KIWI.', answer: 'OK, I will remember the codeword KIWI.' },
  { message: 'What was the codeword?', answer: 'The codeword was KIWI.' },
  { message: 'What was the codeword, again?', answer: 'The codeword was KIWI.' },
];

describe.each(['0.100.0', '0.171.0'])('Codex %s rollout', (version) => {
  it('has no record of an unknown kind', () => {
    expect(records(version).filter((r) => classifyRecord(r).kind === 'unknown')).toEqual([]);
  });

  it.each(turns)('"$message" ends on its own task_complete with its own answer', ({ message, answer }) => {
    expect(observe(version, message)).toMatchObject({ phase: 'ended', status: 'completed', answer, turnKey: expect.any(String) });
  });

  it("the rollout's first user message is the person's, not the context Codex injects", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cal-codex-head-'));
    try {
      const file = path.join(dir, 'rollout.jsonl');
      mkdirSync(dir, { recursive: true });
      writeFileSync(file, records(version).map((r) => JSON.stringify(r)).join('\n') + '\n');
      expect((await readRolloutHead(file)).firstUserMessage).toBe('Remember the codeword KIWI.');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('Codex 0.40.0 (below the floor): why it is not supported', () => {
  it('its rollout has no task_started, task_complete or turn id, so no record ends a turn', () => {
    const types = records('0.40.0').map((r) => (r as { payload?: { type?: string } }).payload?.type);
    expect(types).not.toContain('task_started');
    expect(types).not.toContain('task_complete');
    expect(JSON.stringify(records('0.40.0'))).not.toContain('turn_id');
    expect(observe('0.40.0', 'What was the codeword?').phase).not.toBe('ended');
  });
});
