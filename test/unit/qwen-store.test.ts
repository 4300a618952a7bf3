/**
 * Qwen Code's session file and headless stream, read from recordings of the real binary
 * (0.24.4, docs/qwen.md): the answer and the end of a turn come from these records alone.
 */
import { describe, expect, it } from 'vitest';
import { QwenStreamReader } from '../../src/adapters/qwen/headless.js';
import { projectSlug } from '../../src/adapters/qwen/home.js';
import { QwenTurnObserver } from '../../src/adapters/qwen/store.js';
import { fixtureRecords } from '../support/fixtures.js';

function observe(records: unknown[], message: string, upTo = records.length): QwenTurnObserver {
  const obs = new QwenTurnObserver(message);
  for (const r of records.slice(0, upTo)) obs.feed(r);
  return obs;
}

describe('Qwen Code session file (0.24.4)', () => {
  const shell = fixtureRecords('qwen', 'interactive-shell-tool.session');

  it('a first turn completes on its reply; the memory extraction after it is not part of it', () => {
    const obs = observe(shell, 'Remember the codeword PEAR.');
    expect(obs.observation).toMatchObject({ phase: 'ended', status: 'completed', answer: 'OK, I will remember the codeword PEAR.', turnKey: shell[0].uuid });
    expect(obs.unknownRecords).toBe(0);
  });

  it('a shell turn runs through its function call and tool result and completes on the final reply, listing the command', () => {
    const obs = observe(shell, 'Run it [[cal:shell=echo hello-qwen]]');
    expect(obs.observation).toMatchObject({ phase: 'ended', status: 'completed', answer: 'Tool finished: hello-qwen' });
    expect(obs.tools).toEqual([
      { kind: 'shell', name: 'echo hello-qwen', input: { command: 'echo hello-qwen', description: 'Run: echo hello-qwen' }, output: 'hello-qwen', status: 'completed' },
    ]);
  });

  it('a turn is still running while only its function call is recorded (the reply that calls a tool is no answer)', () => {
    const call = shell.findIndex((r) => r.type === 'assistant' && r.message.parts.some((p: { functionCall?: unknown }) => p.functionCall));
    const obs = observe(shell, 'Run it [[cal:shell=echo hello-qwen]]', call + 1);
    expect(obs.observation.phase).toBe('running');
    expect(obs.awaitingModel).toBe(false);
  });

  it('a prompt with no reply yet (Escape puts it back in the input and records nothing) is running, and a newer prompt makes it lost', () => {
    const slow = shell.findIndex((r) => r.type === 'user' && r.message.parts[0].text.startsWith('Slow one'));
    const obs = observe(shell, 'Slow one [[cal:delay=20000]]');
    expect(slow).toBeGreaterThan(0);
    expect(obs.observation.phase).toBe('running');
    obs.feed({ ...shell[slow], uuid: 'newer', message: { role: 'user', parts: [{ text: 'another prompt' }] } });
    expect(obs.observation).toMatchObject({ phase: 'ended', status: 'lost' });
  });

  it('Escape mid-stream is interrupted, with the text so far: Qwen records the partial reply with no api_response and no usage before it', () => {
    const escaped = fixtureRecords('qwen', 'interactive-escape-mid-stream.session');
    const first = observe(escaped, 'Take your time [[cal:chunks=12]][[cal:chunk-delay=700]][[cal:lines=12]]');
    expect(first.observation).toMatchObject({ phase: 'ended', status: 'completed' });
    const obs = observe(escaped, 'Take your time again [[cal:chunks=12]][[cal:chunk-delay=700]][[cal:lines=12]]');
    expect(obs.observation).toMatchObject({ phase: 'ended', status: 'interrupted', error: 'the turn was interrupted' });
    expect((obs.observation as { answer: string }).answer).toMatch(/^1\/12 /);
    // The next prompt, typed after the input was cleared, completes as usual.
    expect(observe(escaped, 'hello after clear').observation).toMatchObject({ phase: 'ended', status: 'completed', answer: 'Received: hello after clear' });
  });

  it('a request that keeps failing with HTTP 500 fails the turn at its 3rd recorded attempt (of Qwen\'s 7), with Qwen\'s error text', () => {
    const failing = fixtureRecords('qwen', 'interactive-http500.session');
    const attempts = failing.filter((r) => r.systemPayload?.uiEvent?.['event.name'] === 'qwen-code.api_error');
    expect(attempts).toHaveLength(7);
    const early = observe(failing, 'This fails [[cal:http=500]]', failing.indexOf(attempts[1]) + 1);
    expect(early.observation.phase).toBe('running');
    const obs = observe(failing, 'This fails [[cal:http=500]]', failing.indexOf(attempts[2]) + 1);
    expect(obs.observation).toMatchObject({ phase: 'ended', status: 'failed', answer: null, error: '500 Mock internal server error' });
  });

  it('a status Qwen does not retry fails at its first attempt', () => {
    const failing = fixtureRecords('qwen', 'interactive-http500.session');
    const first = failing.find((r) => r.systemPayload?.uiEvent?.['event.name'] === 'qwen-code.api_error');
    const obs = observe(failing.slice(0, 3), 'This fails [[cal:http=500]]');
    obs.feed({ ...first, systemPayload: { uiEvent: { ...first.systemPayload.uiEvent, status_code: 400, error_message: '400 bad request' } } });
    expect(obs.observation).toMatchObject({ phase: 'ended', status: 'failed', error: '400 bad request' });
  });

  it('names the project folder as Qwen does: every character not [A-Za-z0-9] becomes "-"', () => {
    expect(projectSlug('/work/wt/h44q/.tmp/m/w')).toBe('-work-wt-h44q--tmp-m-w');
  });
});

describe('Qwen Code headless stream-json (0.24.4)', () => {
  it('reads the session id, the shell call with its output, and the answer from the result', () => {
    const reader = new QwenStreamReader();
    for (const e of fixtureRecords('qwen', 'headless-shell.stream')) reader.feed(e);
    expect(reader.sessionId).toBe('11111111-2222-4333-8444-555555555555');
    expect(reader.ended).toBe('completed');
    expect(reader.answer).toBe('Tool finished: hi-q');
    expect(reader.tools).toEqual([{ kind: 'shell', name: 'echo hi-q', input: { command: 'echo hi-q', description: 'Run: echo hi-q' }, output: 'hi-q', status: 'completed' }]);
  });

  it('an error result fails with its message', () => {
    const reader = new QwenStreamReader();
    reader.feed({ type: 'system', subtype: 'init', session_id: 's1' });
    reader.feed({ type: 'result', subtype: 'error_during_execution', is_error: true, error: { message: '[API Error: 500 nope]' } });
    expect(reader).toMatchObject({ ended: 'failed', error: '[API Error: 500 nope]' });
    expect(reader.answer).toBeNull();
  });
});
