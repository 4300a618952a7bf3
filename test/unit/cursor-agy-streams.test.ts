import { describe, expect, it } from 'vitest';
import { AgyStream, conversationFromExitHint } from '../../src/adapters/agy/stream.js';
import { agyArgv } from '../../src/adapters/agy/turn.js';
import { refusalOf } from '../../src/adapters/cursor/binary.js';
import { CursorStream } from '../../src/adapters/cursor/stream.js';
import { cursorArgv } from '../../src/adapters/cursor/turn.js';
import { redactSecrets, stderrTail } from '../../src/adapters/ndjson-process.js';
import { UndecidableTurnObserver } from '../../src/adapters/structured-only.js';

/**
 * The event shapes of Cursor's and Agy's stream-json as documented (research §D and §E), fed
 * one by one, including variants the stand-ins do not produce.
 */
const cfg = { cwd: '/w', model: null, systemPrompt: null, mcpConfigPath: null, toolPolicy: 'default' };
const text = (t: string) => ({ type: 'assistant', message: { role: 'assistant', content: [{ type: 'text', text: t }] }, session_id: 'c1' });

describe('Cursor stream-json', () => {
  it('takes the chat id from system/init, the answer from the assistant text after the last tool call, tools by call_id', () => {
    const s = new CursorStream();
    expect(s.observation).toEqual({ phase: 'waiting' });
    s.feed({ type: 'system', subtype: 'init', apiKeySource: 'login', cwd: '/w', session_id: 'c1', model: 'Auto', permissionMode: 'default' });
    s.feed({ type: 'user', message: { role: 'user', content: [{ type: 'text', text: 'hi' }] }, session_id: 'c1' });
    s.feed({ type: 'thinking', subtype: 'delta', text: '…', session_id: 'c1', timestamp_ms: 1 });
    s.feed(text('Let me look. '));
    s.feed({ type: 'tool_call', subtype: 'started', call_id: 't1', tool_call: { readToolCall: { args: { path: 'a.txt' } } } });
    s.feed({ type: 'tool_call', subtype: 'completed', call_id: 't1', tool_call: { readToolCall: { args: { path: 'a.txt' }, result: { fileNotFound: {} } } } });
    s.feed({ type: 'tool_call', subtype: 'started', call_id: 't2', tool_call: { shellToolCall: { args: { command: 'rm -rf x' } } } });
    s.feed({ type: 'tool_call', subtype: 'completed', call_id: 't2', tool_call: { shellToolCall: { args: { command: 'rm -rf x' }, result: { rejected: { reason: 'needs approval' } } } } });
    s.feed(text('It is '));
    s.feed(text('missing.'));
    s.feed({ type: 'result', subtype: 'success', is_error: false, result: 'Let me look. It is missing.', session_id: 'c1', request_id: 'r' });
    expect(s.sessionId).toBe('c1');
    expect(s.answer).toBe('It is missing.');
    expect(s.tools).toEqual([
      { kind: 'tool', name: 'read', input: { path: 'a.txt' }, status: 'fileNotFound' },
      { kind: 'shell', name: 'rm -rf x', input: { command: 'rm -rf x' }, status: 'rejected', output: 'needs approval' },
    ]);
    expect(s.unknownEvents).toBe(0);
  });

  it('falls back to result.result without assistant events; counts shapes it does not know', () => {
    const s = new CursorStream();
    s.feed({ type: 'result', subtype: 'success', is_error: false, result: 'done', session_id: 'c9' });
    s.feed({ type: 'something_new' });
    expect(s.answer).toBe('done');
    expect(s.sessionId).toBe('c9');
    expect(s.unknownEvents).toBe(1);
  });

  it('argv: the message after --, the workspace and the chat id; tool policies in Cursor terms', () => {
    expect(cursorArgv('/bin/cursor-agent', { ...cfg, model: 'auto', toolPolicy: 'bypass' }, 'c1', '--not-a-flag', '/s/cal')).toEqual([
      '/bin/cursor-agent', '-p', '--output-format', 'stream-json', '--trust', '--workspace', '/w', '--resume', 'c1', '--model', 'auto', '--force', '--plugin-dir', '/s/cal', '--approve-mcps', '--', '--not-a-flag',
    ]);
    expect(() => cursorArgv('/bin/cursor-agent', { ...cfg, toolPolicy: 'accept-edits' }, 'c1', 'm', null)).toThrow(/tool policy accept-edits has no Cursor equivalent/);
  });

  it('the two refusals before any model request are told apart from other failures', () => {
    expect(refusalOf('⚠ Workspace Trust Required Cursor Agent can execute code …', '/w')?.kind).toBe('cli_unsupported');
    expect(refusalOf("Authentication required. Please run 'agent login' first", '/w')?.kind).toBe('turn_failed');
    expect(refusalOf('Not authenticated', '/w')?.kind).toBe('turn_failed');
    expect(refusalOf('Error: stream closed', '/w')).toBeNull();
  });
});

describe('Agy stream-json', () => {
  it('takes the id from init (top level or nested), accumulates agent text_deltas after the last tool step, prefers result.response', () => {
    const s = new AgyStream();
    s.feed({ event: 'init', init: { conversation_id: 'a1', model: 'm', cwd: '/w', permission_mode: 'default', agent: 'default', tools: [] } });
    expect(s.conversationId).toBe('a1');
    s.feed({ event: 'step_update', step_update: { conversation_id: 'a1', step_index: 0, state: 'DONE', step_type: 'user_input' } });
    s.feed({ event: 'step_update', step_update: { step_index: 1, state: 'ACTIVE', step_type: 'agent_response', text_delta: 'Checking. ' } });
    s.feed({ event: 'step_update', step_update: { step_index: 2, state: 'ACTIVE', step_type: 'tool', tool_name: 'view_file', tool_info: { name: 'view_file', parameters: { path: 'a' } } } });
    s.feed({ event: 'step_update', step_update: { step_index: 2, state: 'DONE', step_type: 'tool', tool_name: 'view_file', tool_info: { name: 'view_file', parameters: { path: 'a' }, output: { lines: 3 } } } });
    s.feed({ event: 'step_update', step_update: { step_index: 3, state: 'ACTIVE', step_type: 'agent_response', text_delta: 'Three ' } });
    s.feed({ event: 'step_update', step_update: { step_index: 3, state: 'ACTIVE', step_type: 'agent_response', text_delta: 'lines.' } });
    s.feed({ event: 'result', result: { conversation_id: 'a1', status: 'SUCCESS', response: '', error: '', usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } } });
    expect(s.answer).toBe('Three lines.');
    expect(s.failure).toBeNull();
    expect(s.tools).toEqual([{ kind: 'tool', name: 'view_file', input: { path: 'a' }, output: '{"lines":3}', status: 'completed' }]);
    const t = new AgyStream();
    t.feed({ event: 'init', conversation_id: 'a2', init: {} });
    t.feed({ event: 'result', result: { status: 'SUCCESS', response: 'From the result.' } });
    expect([t.conversationId, t.answer]).toEqual(['a2', 'From the result.']);
  });

  it.each(['event', 'type'] as const)('reads every event whose name is under `%s` (issue 44: parsers disagree)', (key) => {
    const at = (name: string, rest: Record<string, unknown>) => ({ [key]: name, ...rest });
    const s = new AgyStream();
    s.feed(at('init', { conversation_id: 'a3', init: {} }));
    s.feed(at('step_update', { step_update: { step_index: 1, state: 'ACTIVE', step_type: 'tool', tool_name: 'view_file', tool_info: { name: 'view_file', parameters: { path: 'a' } } } }));
    s.feed(at('step_update', { step_update: { step_index: 2, state: 'ACTIVE', step_type: 'agent_response', text_delta: 'Done.' } }));
    s.feed(at('result', { result: { status: 'SUCCESS', response: '' } }));
    expect([s.conversationId, s.answer, s.tools.length, s.unknownEvents]).toEqual(['a3', 'Done.', 1, 0]);
    const e = new AgyStream();
    e.feed(at('error', { error: { message: 'quota exhausted' } }));
    expect(e.failure).toBe('quota exhausted');
  });

  it('an error envelope or a status other than SUCCESS is the failure, in the CLI\'s words', () => {
    const s = new AgyStream();
    s.feed({ event: 'error', error: { message: 'quota exhausted' } });
    expect(s.failure).toBe('quota exhausted');
    const r = new AgyStream();
    r.feed({ event: 'result', result: { status: 'CANCELLED', response: '' } });
    expect(r.failure).toBe('agy reported status CANCELLED');
  });

  it('the exit hint names the conversation when the stream did not', () => {
    expect(conversationFromExitHint('To resume: agy --conversation=3b4a1d20-3968-4ed2-90b3-00eea3060b02\n')).toBe('3b4a1d20-3968-4ed2-90b3-00eea3060b02');
    expect(conversationFromExitHint('nothing here')).toBeNull();
  });

  it('argv follows what the release offers; the message is -p\'s value, last', () => {
    const all = { printFlag: '-p', addDir: true, printTimeout: true, model: true, skipPermissions: true };
    expect(agyArgv('/bin/agy', all, { ...cfg, model: 'claude', toolPolicy: 'bypass' }, 'a1', '-x', 90_500)).toEqual([
      '/bin/agy', '--output-format', 'stream-json', '--conversation', 'a1', '--add-dir', '/w', '--print-timeout', '91s', '--model', 'claude', '--dangerously-skip-permissions', '-p', '-x',
    ]);
    expect(() => agyArgv('/bin/agy', { ...all, model: false }, { ...cfg, model: 'x' }, null, 'm', 1000)).toThrow(/no --model flag/);
  });
});

describe('the shared pieces', () => {
  it('stderr tails keep the last lines that say something and never a secret of the environment', () => {
    const env = { CURSOR_API_KEY: 'key_abcdef123456', HOME: '/home/u', SHORT_TOKEN: 'abc' };
    expect(stderrTail('\nwarning: x\nError: bad key key_abcdef123456 (abc)\n\n', env)).toBe('warning: x Error: bad key [redacted] (abc)');
    expect(redactSecrets('/home/u', env)).toBe('/home/u');
    expect(stderrTail('x'.repeat(1000), env, 50)).toHaveLength(50);
  });

  it('the transcript observer of a structured-only CLI never claims a turn ended nor that it was never received', () => {
    const o = new UndecidableTurnObserver();
    o.feed({ anything: true });
    expect(o.observation).toEqual({ phase: 'running', turnKey: null });
    expect(o.unknownRecords).toBe(1);
  });
});
