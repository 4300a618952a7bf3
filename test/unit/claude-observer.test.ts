import { describe, expect, it } from 'vitest';
import { ClaudeTurnObserver } from '../../src/adapters/claude-code/transcript.js';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { feedFixture, fixtureRecords, fixturesDir } from '../support/fixtures.js';

/** Parser tests over transcripts recorded from the real Claude Code 2.1.328. */
const observe = (name: string, message: string) => feedFixture(new ClaudeTurnObserver(message), 'claude-code', name);

describe('Claude Code turn observer (recorded 2.1.328 transcripts)', () => {
  it('a normal turn completes on turn_duration with the assistant text and its promptId', () => {
    const o = observe('interactive-loop-resume', 'What was the codeword?');
    expect(o.observation).toMatchObject({ phase: 'ended', status: 'completed', turnKey: expect.stringMatching(/^c150b67a/) });
    expect(o.observation.phase === 'ended' && o.observation.answer).toMatch(/^MOCK#4 got \[What was the codeword\?\]/);
  });

  it('an API error record fails the turn with the CLI message, never an empty answer', () => {
    const o = observe('interactive-api-errors-500-529-400', 'FAIL500 now');
    expect(o.observation).toMatchObject({ phase: 'ended', status: 'failed', answer: null });
    expect(o.observation.phase === 'ended' && o.observation.error).toMatch(/^API Error: 500/);
  });

  it('an interrupt during streaming ends the turn as interrupted', () => {
    const o = observe('interactive-mixed-error-interrupt-tool-resume-continue-cwdchange', 'SLOW interrupt me');
    expect(o.observation).toMatchObject({ phase: 'ended', status: 'interrupted' });
  });

  it('an interrupt during a tool ends the turn as interrupted and keeps the tool activity', () => {
    const o = observe('interactive-interrupt-during-tool', 'TOOLTEST TOOLSLOW interrupt during tool');
    expect(o.observation).toMatchObject({ phase: 'ended', status: 'interrupted' });
    expect(o.tools).toHaveLength(1);
    expect(o.tools[0]).toMatchObject({ kind: 'shell' });
  });

  it('a tool turn lists the shell command and answers with the final text only', () => {
    const o = observe('interactive-mixed-error-interrupt-tool-resume-continue-cwdchange', 'TOOLTEST run echo');
    expect(o.observation).toMatchObject({ phase: 'ended', status: 'completed', answer: 'Tool result was: hi' });
    expect(o.tools).toEqual([expect.objectContaining({ kind: 'shell', name: 'echo hi', output: 'hi', status: 'completed' })]);
  });

  it('a queued message becomes its own turn after the running one', () => {
    const o = observe('interactive-queued-and-absorbed-midturn', 'QUEUED second message');
    expect(o.observation).toMatchObject({ phase: 'ended', status: 'completed' });
    expect(o.observation.phase === 'ended' && o.observation.answer).toMatch(/QUEUED second message/);
  });

  it('a message not in the transcript is still waiting', () => {
    expect(observe('interactive-loop-resume', 'never sent').observation).toEqual({ phase: 'waiting' });
  });

  it('with Stop hooks, the turn is running until they ran, and ends on their summary with the answer', () => {
    const all = fixtureRecords('claude-code', 'interactive-mixed-error-interrupt-tool-resume-continue-cwdchange');
    const o = new ClaudeTurnObserver('hello hooks codeword KIWI');
    for (const r of all) {
      if ((r as { subtype?: string }).subtype === 'stop_hook_summary') break;
      o.feed(r);
    }
    expect(o.observation.phase).toBe('running');
    const summary = all.find((r) => (r as { subtype?: string }).subtype === 'stop_hook_summary');
    o.feed(summary);
    expect(o.observation).toMatchObject({ phase: 'ended', status: 'completed', answer: expect.stringMatching(/^MOCK#11 got \[hello hooks codeword KIWI\]/) });
  });

  it('a newer human prompt closes a dangling turn as lost', () => {
    const o = new ClaudeTurnObserver('first');
    o.feed({ type: 'user', promptId: 'p1', message: { role: 'user', content: 'first' } });
    o.feed({ type: 'user', promptId: 'p2', message: { role: 'user', content: 'second' } });
    expect(o.observation).toMatchObject({ phase: 'ended', status: 'lost' });
  });

  it('a print-mode turn (claude -p writes no turn_duration) ends with the process\'s cost-state', () => {
    const o = observe('print-mode-with-hooks', 'hello from print mode codeword PEAR');
    expect(o.observation).toMatchObject({ phase: 'ended', status: 'completed' });
    expect(o.observation.phase === 'ended' && o.observation.answer).toMatch(/^MOCK#16 got \[hello from print mode codeword PEAR\]/);
  });

  it('cost-state after a tool call is a process that left mid-turn (lost); before any reply it is no end', () => {
    const user = { type: 'user', promptId: 'p1', message: { role: 'user', content: 'run it' } };
    const toolUse = { type: 'assistant', message: { id: 'm1', content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'sleep 9' } }], stop_reason: 'tool_use' } };
    const left = new ClaudeTurnObserver('run it');
    for (const r of [user, toolUse, { type: 'cost-state' }]) left.feed(r);
    expect(left.observation).toMatchObject({ phase: 'ended', status: 'lost', answer: null });
    // A resumed TUI writes cost-state as it starts: a turn with no reply yet goes on.
    const starting = new ClaudeTurnObserver('run it');
    for (const r of [user, { type: 'cost-state' }]) starting.feed(r);
    expect(starting.observation.phase).toBe('running');
  });

  it('unknown record kinds are skipped and counted', () => {
    const o = new ClaudeTurnObserver('x');
    o.feed({ type: 'brand-new-kind' });
    o.feed(42);
    o.feed({ type: 'mode', mode: 'normal' });
    expect(o.unknownRecords).toBe(2);
  });
});

/** Feeds a fixture named in full (one not recorded with the default release). */
function feedFile(observer: ClaudeTurnObserver, file: string): ClaudeTurnObserver {
  for (const line of readFileSync(path.join(fixturesDir, file), 'utf8').split('\n').filter(Boolean)) observer.feed(JSON.parse(line));
  return observer;
}

describe('records Claude Code injects are never a new prompt (issue 44)', () => {
  it("a Skill tool result followed by the skill's injected user text (sourceToolUseID, a promptId of its own) completes with the answer, not lost", () => {
    // Constructed in the shape of a public 2.1.258 transcript (Skill tool_use, its result, then the
    // skill's prose as a user text record that only sourceToolUseID marks).
    const o = feedFile(new ClaudeTurnObserver('Triage the monitor alerts with the skill.'), 'claude-code-2.1.258-interactive-skill-injected-text.jsonl');
    expect(o.observation).toMatchObject({ phase: 'ended', status: 'completed', answer: 'The noisiest monitor is kuma-edge: 41 of 57 alerts.' });
    expect(o.tools).toEqual([expect.objectContaining({ kind: 'tool', input: { skill: 'incident-triage', args: 'monitor-down spam' } })]);
  });

  it("a skill's injected user text with no sourceToolUseID (its parent the Skill tool's result record) completes with the answer, not lost", () => {
    // The held-out corpus's shape: the same turn as above, written by a release that does not mark
    // the skill's prose with sourceToolUseID (and gives it a promptId of its own). Lost on 91258d3.
    const o = feedFile(new ClaudeTurnObserver('Triage the monitor alerts with the skill.'), 'claude-code-2.1.258-interactive-skill-injected-text-no-source.jsonl');
    expect(o.observation).toMatchObject({ phase: 'ended', status: 'completed', answer: 'The noisiest monitor is kuma-edge: 41 of 57 alerts.' });
  });

  it("a person's next prompt after a reply to a tool result is still a new prompt (lost before its end)", () => {
    const lines = readFileSync(path.join(fixturesDir, 'claude-code-2.1.258-interactive-skill-injected-text-no-source.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    // The prose's parent is now the assistant's reply: a prompt typed after it, not the tool's own text.
    lines[3].parentUuid = 'a-0002';
    const o = new ClaudeTurnObserver('Triage the monitor alerts with the skill.');
    for (const r of lines.slice(0, 4)) o.feed(r);
    expect(o.observation).toMatchObject({ phase: 'ended', status: 'lost' });
  });

  it('a 2.0.26 turn (no turn_duration ever) with a final reply completes with it when the next prompt follows, with no Stop signal kept', () => {
    const o = feedFile(new ClaudeTurnObserver('Which file defines the router?'), 'claude-code-2.0.26-interactive-reply-no-turn-duration.jsonl');
    expect(o.observation).toMatchObject({ phase: 'ended', status: 'completed', answer: 'The router is defined in src/router.ts.' });
  });

  it('a turn that calls a tool and has no final reply is still lost when a newer prompt follows (2.0.x too)', () => {
    const o = new ClaudeTurnObserver('Which file defines the router?');
    const lines = readFileSync(path.join(fixturesDir, 'claude-code-2.0.26-interactive-reply-no-turn-duration.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    lines[2].message.content = [{ type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls' } }];
    lines[2].message.stop_reason = 'tool_use';
    for (const r of lines) o.feed(r);
    expect(o.observation).toMatchObject({ phase: 'ended', status: 'lost', answer: null });
  });
});
