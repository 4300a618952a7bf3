import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ClaudeStream, printArgv } from '../../src/adapters/claude-code/structured.js';
import { messageDelivery, PiStream } from '../../src/adapters/pi/structured.js';
import { repoRoot } from '../support/clis.js';

/** Parser tests over the JSON event streams of the real pinned CLIs (recorded against the scripted model). */
function events(name: string): unknown[] {
  return readFileSync(path.join(repoRoot, 'fixtures', name), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

function claude(name: string): ClaudeStream {
  const s = new ClaudeStream();
  for (const e of events(`claude-code-2.1.328-print-stream-json-${name}.jsonl`)) s.feed(e);
  return s;
}

function pi(name: string): PiStream {
  const s = new PiStream();
  for (const e of events(`pi-0.73.1-mode-json-${name}.jsonl`)) s.feed(e);
  return s;
}

describe('claude -p --output-format stream-json (2.1.328)', () => {
  it('a tool turn: the session id from init, the Bash call with its output, the result event', () => {
    const s = claude('tool');
    expect(s.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(s.tools).toEqual([{ kind: 'shell', name: 'echo hello-tool', input: { command: 'echo hello-tool', description: 'Run: echo hello-tool' }, output: 'hello-tool', status: 'completed' }]);
    expect(s.result).toMatchObject({ is_error: false, terminal_reason: 'completed', result: 'Tool finished: hello-tool' });
    expect(s.partialAnswer).toBe('Tool finished: hello-tool');
    expect(s.unknownEvents).toBe(0);
  });

  it('an API error keeps subtype success: is_error and terminal_reason say it failed', () => {
    const s = claude('http500');
    expect(s.result).toMatchObject({ subtype: 'success', is_error: true, terminal_reason: 'api_error', api_error_status: 500 });
    expect(s.result?.result).toMatch(/^API Error: 500 Mock internal server error/);
  });

  it('an unknown resume id: a result with no init, errors[] in the CLI\'s words', () => {
    const s = claude('unknown-resume');
    expect(s.result).toMatchObject({ is_error: true, errors: [expect.stringMatching(/^No conversation found with session ID: /)] });
    expect(s.observation).toEqual({ phase: 'running', turnKey: null });
  });

  it('a SIGINT mid-turn: Claude records "[Request interrupted by user]", with a result (aborted_streaming) or none before it exits', () => {
    const bare = claude('interrupted');
    expect(bare.interrupted).toBe(true);
    expect(bare.result).toBeNull();
    const withResult = claude('interrupted-result');
    expect(withResult.interrupted).toBe(true);
    expect(withResult.result).toMatchObject({ is_error: true, terminal_reason: 'aborted_streaming' });
    expect(claude('tool').interrupted).toBe(false);
  });

  it('argv: print mode, stream-json, the id, the session flags; --strict-mcp-config only with an MCP config; never the message', () => {
    const cli = { path: '/x/claude', realPath: '/x/claude.exe', version: '2.1.328' };
    const config = { cwd: '/w', model: 'opus', systemPrompt: 'be brief', mcpConfigPath: '/c/mcp.json', toolPolicy: 'default' };
    const req = { cli, env: {}, config, mode: 'fresh' as const, sessionId: 'id-1', message: 'secret text' };
    expect(printArgv(req, 'fresh', 'id-1')).toEqual(['/x/claude.exe', '-p', '--input-format', 'stream-json', '--output-format', 'stream-json', '--verbose', '--include-partial-messages', '--session-id', 'id-1', '--model', 'opus', '--append-system-prompt', 'be brief', '--mcp-config', '/c/mcp.json', '--strict-mcp-config']);
    expect(printArgv({ ...req, config: { ...config, mcpConfigPath: null } }, 'resume', 'id-1')).not.toContain('--strict-mcp-config');
    expect(printArgv(req, 'resume', 'id-1')).toContain('--resume');
  });

  it('--include-partial-messages: text deltas grow the partial answer; a new message starts afresh; a subagent\'s are not shown', () => {
    const s = new ClaudeStream();
    const delta = (text: string, parent: string | null = null) => ({ type: 'stream_event', parent_tool_use_id: parent, event: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } } });
    s.feed({ type: 'system', subtype: 'init', session_id: 'sid' });
    s.feed({ type: 'stream_event', parent_tool_use_id: null, event: { type: 'message_start', message: {} } });
    s.feed(delta('Hel'));
    expect(s.partialAnswer).toBe('Hel');
    s.feed(delta('lo'));
    expect(s.partialAnswer).toBe('Hello');
    s.feed(delta('SUBAGENT', 'toolu_1'));
    expect(s.partialAnswer).toBe('Hello');
    s.feed({ type: 'stream_event', parent_tool_use_id: null, event: { type: 'message_start', message: {} } });
    s.feed(delta('Next'));
    expect(s.partialAnswer).toBe('Next');
    expect(s.unknownEvents).toBe(0);
  });

});

describe('pi --mode json (0.73.1)', () => {
  it('a tool turn: the session id from the header, the bash call with its output, completed at agent_end', () => {
    const s = pi('tool');
    expect(s.sessionId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
    expect(s.ended).toBe(true);
    expect(s.last).toMatchObject({ stopReason: 'stop', content: [{ type: 'text', text: 'Tool finished: pi-tool' }] });
    expect(s.tools).toEqual([{ kind: 'shell', name: 'echo pi-tool', input: { command: 'echo pi-tool' }, output: 'pi-tool\n', status: 'completed' }]);
    expect(s.unknownEvents).toBe(0);
  });

  it('an HTTP 500 (pi exits 0): the last assistant message has stopReason error and Pi\'s errorMessage', () => {
    const s = pi('http500');
    expect(s.ended).toBe(true);
    expect(s.last).toMatchObject({ stopReason: 'error', errorMessage: '500 Mock internal server error' });
  });

  it('an agent_end that Pi retries after (auto_retry_start) does not close the run', () => {
    const s = pi('http500');
    s.feed({ type: 'auto_retry_start', attempt: 1, maxAttempts: 3, delayMs: 2000, errorMessage: '500' });
    expect(s.ended).toBe(false);
    s.feed({ type: 'auto_retry_end', success: false, attempt: 3, finalError: '500 Mock internal server error' });
    expect(s.retryError).toBe('500 Mock internal server error');
  });

  it('the run is answered (the turn may end before pi exits) only at an agent_end after a stop, never after an error Pi may retry', () => {
    const s = pi('http500');
    expect(s.ended).toBe(true);
    expect(s.answered).toBe(false);
    s.feed({ type: 'auto_retry_start', attempt: 1, maxAttempts: 3, delayMs: 2000, errorMessage: '500' });
    s.feed({ type: 'message_end', message: { role: 'assistant', content: [{ type: 'text', text: 'Retried.' }], stopReason: 'stop' } });
    expect(s.answered).toBe(false);
    s.feed({ type: 'agent_end', messages: [] });
    expect(s.answered).toBe(true);
    const aborted = new PiStream();
    aborted.feed({ type: 'message_end', message: { role: 'assistant', content: [], stopReason: 'aborted' } });
    aborted.feed({ type: 'agent_end', messages: [] });
    expect([aborted.ended, aborted.answered]).toEqual([true, false]);
  });

  it('message_update: the assistant message so far becomes the partial answer as it grows', () => {
    const s = new PiStream();
    const update = (text: string) => ({ type: 'message_update', assistantMessageEvent: { type: 'text_delta', delta: text }, message: { role: 'assistant', content: [{ type: 'text', text }] } });
    s.feed(update('One'));
    expect(s.partialAnswer).toBe('One');
    s.feed(update('One two'));
    expect(s.partialAnswer).toBe('One two');
    s.feed({ type: 'message_update', message: { role: 'user', content: 'mine' } });
    expect(s.partialAnswer).toBe('One two');
    expect(s.unknownEvents).toBe(0);
  });

  it('message_update on Pi 1.x (only the event, no message): the text deltas since message_start join to the partial answer', () => {
    const s = new PiStream();
    const delta = (d: string) => ({ type: 'message_update', usage: {}, assistantMessageEvent: { type: 'text_delta', contentIndex: 0, delta: d } });
    s.feed({ type: 'message_start', message: { role: 'assistant', content: [] } });
    s.feed({ type: 'message_update', assistantMessageEvent: { type: 'text_start', contentIndex: 0 } });
    s.feed(delta('alpha'));
    expect(s.partialAnswer).toBe('alpha');
    s.feed(delta(' beta'));
    expect(s.partialAnswer).toBe('alpha beta');
    // A new assistant message (after a tool call) starts its own text.
    s.feed({ type: 'message_start', message: { role: 'assistant', content: [] } });
    s.feed(delta('gamma'));
    expect(s.partialAnswer).toBe('gamma');
    s.feed({ type: 'agent_settled', aborted: false });
    expect(s.unknownEvents).toBe(0);
  });

  it('message delivery: Pi trims stdin, so trailing blanks go as the argument; leading blanks in argv when it fits', () => {
    expect(messageDelivery('hello')).toEqual({ stdin: 'hello', argv: [] });
    expect(messageDelivery('-v @f x \n\n')).toEqual({ stdin: '-v @f x', argv: [' \n\n'] });
    expect(messageDelivery('  lead\ttab ')).toEqual({ stdin: '', argv: ['  lead\ttab '] });
    const big = ` ${'x'.repeat(200_000)}\n`;
    expect(messageDelivery(big)).toEqual({ stdin: big.trimEnd(), argv: ['\n'] });
  });
});
