import { describe, expect, it } from 'vitest';
import { ClineTurnObserver } from '../../src/adapters/cline/observer.js';
import type { MirrorRecord } from '../../src/adapters/cline/store.js';

/**
 * Cline CLI 3.0.65's turns as cal's mirror of its session files holds them (store.ts), in the
 * shapes measured against the scripted model (docs/cline.md): a plain answer, a shell tool, a
 * model error (an assistant message marked as an error), an Escape (the prompt and nothing after).
 */
const sent = new Date('2026-12-06T12:00:00.000Z');
const at = (s: number) => new Date(sent.getTime() + s * 1000).toISOString();
let n = 0;
const msg = (index: number, role: string, content: unknown[], s: number, extra: Record<string, unknown> = {}): MirrorRecord =>
  ({ kind: 'message', index, hash: String(n++), timestamp: at(s), message: { id: `m${index}`, role, content, ts: Date.parse(at(s)), ...extra } }) as MirrorRecord;
const status = (value: string, messages: number, s: number): MirrorRecord => ({ kind: 'status', status: value, messages, timestamp: at(s) });
const prompt = (index: number, text: string, s: number) => msg(index, 'user', [{ type: 'text', text: `<user_input mode="act">${text}</user_input>` }], s);
const earlier = [prompt(0, 'Remember the codeword KIWI.', -20), msg(1, 'assistant', [{ type: 'text', text: 'OK, I will remember the codeword KIWI.' }], -19), status('idle', 2, -19)];

function observe(records: MirrorRecord[], message = 'What was the codeword?') {
  const o = new ClineTurnObserver(message, sent, { firstPromptAfterSend: true });
  for (const r of [...earlier, ...records]) o.feed(r);
  return o;
}

describe("Cline's turn from its session files", () => {
  it('runs from the first running status after the send, before the prompt is recorded', () => {
    expect(observe([status('running', 2, 1)]).observation.phase).toBe('running');
    expect(observe([status('running', 2, -1)]).observation.phase).toBe('waiting');
  });

  it('completes on idle with the last assistant message as the answer', () => {
    const o = observe([status('running', 2, 1), prompt(2, 'What was the codeword?', 2), msg(3, 'assistant', [{ type: 'text', text: 'The codeword was KIWI.' }], 3), status('idle', 4, 3)]);
    expect(o.observation).toMatchObject({ phase: 'ended', status: 'completed', answer: 'The codeword was KIWI.', turnKey: 'm2' });
  });

  it('waits for an answer recorded just after idle', () => {
    const o = observe([status('running', 2, 1), status('idle', 3, 2), prompt(2, 'What was the codeword?', 2)]);
    expect(o.observation.phase).toBe('running');
    o.feed(msg(3, 'assistant', [{ type: 'text', text: 'The codeword was KIWI.' }], 3));
    o.feed(status('idle', 4, 3));
    expect(o.observation).toMatchObject({ status: 'completed', answer: 'The codeword was KIWI.' });
  });

  it('records a shell call by its command and its output out of the JSON result, and never ends on a pending tool call', () => {
    const call = msg(3, 'assistant', [{ type: 'tool_use', id: 't1', name: 'run_commands', input: { commands: ['pwd'] } }], 3);
    const o = observe([status('running', 2, 1), prompt(2, 'Where?', 2), call, status('idle', 4, 3)], 'Where?');
    expect(o.observation.phase).toBe('running');
    o.feed(msg(4, 'user', [{ type: 'tool_result', tool_use_id: 't1', name: 'run_commands', content: '[{"query":"pwd","result":"/work\\n","success":true}]' }], 4));
    o.feed(msg(5, 'assistant', [{ type: 'text', text: 'Tool finished: /work' }], 5));
    o.feed(status('idle', 6, 5));
    expect(o.observation).toMatchObject({ status: 'completed', answer: 'Tool finished: /work' });
    expect(o.tools).toEqual([{ kind: 'shell', name: 'pwd', input: { commands: ['pwd'] }, output: '/work\n' }]);
  });

  it("fails with Cline's words on the error message it records for a model error", () => {
    const error = msg(3, 'assistant', [{ type: 'text', text: 'Mock internal server error' }], 60, { metadata: { displayOnly: true, displayRole: 'error' } });
    const o = observe([status('running', 2, 1), prompt(2, 'This one fails', 2), error, status('idle', 4, 60)], 'This one fails');
    expect(o.observation).toMatchObject({ status: 'failed', answer: null, error: 'Mock internal server error' });
  });

  it('ends interrupted when idle leaves the prompt with nothing after it (Escape)', () => {
    const o = observe([status('running', 2, 1), prompt(2, 'Hold on', 2), status('idle', 3, 3)], 'Hold on');
    expect(o.observation.phase).toBe('running');
    // The grace for a late answer runs out (the observer is read on every poll).
    const later = Date.now() + 4_000;
    const real = Date.now;
    Date.now = () => later;
    try {
      expect(o.observation).toMatchObject({ status: 'interrupted', answer: null });
    } finally {
      Date.now = real;
    }
  });
});
