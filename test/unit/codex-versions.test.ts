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

describe('Codex 0.100.0: tool calls and failed turns without item_completed', () => {
  const recorded = (name: string) =>
    readFileSync(path.join(repoRoot, 'fixtures', `codex-0.100.0-${name}.rollout.jsonl`), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  const observeRecorded = (name: string, message: string) => {
    const o = new CodexTurnObserver(message);
    for (const r of recorded(name)) o.feed(r);
    return o;
  };

  it('a shell call is on the turn from its function_call and function_call_output, once', () => {
    const o = observeRecorded('shell-command', 'Print the working directory [[cal:shell=pwd]]');
    expect(o.observation).toMatchObject({ phase: 'ended', status: 'completed', answer: expect.stringMatching(/^Tool finished: \//) });
    expect(o.tools).toEqual([expect.objectContaining({ kind: 'shell', name: 'pwd', status: 'completed', output: expect.stringMatching(/work1/) })]);
  });

  it('an MCP call is mcp__<server>__<tool>, its output the result\'s text', () => {
    const o = observeRecorded('mcp-tool-call', 'Call the probe');
    expect(o.observation).toMatchObject({ phase: 'ended', status: 'completed' });
    expect(o.tools).toEqual([expect.objectContaining({ kind: 'mcp', server: 'calprobe', name: 'echo', output: expect.stringMatching(/^echo: MCP/) })]);
  });

  it('a turn whose request failed (task_complete with no answer, no error recorded) is failed, never an empty success', () => {
    const o = observeRecorded('failed-turn', 'This one fails [[cal:http=500]]');
    expect(o.observation).toMatchObject({ phase: 'ended', status: 'failed', answer: null });
    expect(observeRecorded('failed-turn', 'Remember the codeword').observation).toMatchObject({ phase: 'ended', status: 'completed' });
  });

  it('0.171.0 (item_completed) takes its tools from the items only', () => {
    for (const { message } of turns) expect(observe('0.171.0', message).phase).toBe('ended');
    const o = new CodexTurnObserver('What was the codeword?');
    for (const r of records('0.171.0')) o.feed(r);
    expect(o.tools).toEqual([]);
  });
});
