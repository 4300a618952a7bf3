/** Stream framing of each dialect, checked over real HTTP against the running server. */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { bodies, json, paths, postJson, sseFrames } from './helpers.js';

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(async () => {
  await server.close();
});

describe('Anthropic Messages', () => {
  it('streams a text answer as message_start … message_stop with matching event: lines', async () => {
    const r = await postJson(server.url + paths.anthropic, bodies.anthropic('Remember the codeword MANGO. [[cal:chunks=4]]'));
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = sseFrames(r.text);
    expect(frames.map((f) => f.event)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    for (const f of frames) expect(json(f).type).toBe(f.event);
    const start = json(frames[0]!).message as Record<string, unknown>;
    expect(start).toMatchObject({ type: 'message', role: 'assistant', model: 'claude-test', content: [], stop_reason: null });
    expect(json(frames[1]!).content_block).toEqual({ type: 'text', text: '' });
    const text = frames
      .filter((f) => f.event === 'content_block_delta')
      .map((f) => (json(f).delta as { type: string; text: string }))
      .map((d) => {
        expect(d.type).toBe('text_delta');
        return d.text;
      })
      .join('');
    expect(text).toBe('OK, I will remember the codeword MANGO.');
    const delta = json(frames[7]!);
    expect(delta.delta).toEqual({ stop_reason: 'end_turn', stop_sequence: null });
    expect((delta.usage as { output_tokens: number }).output_tokens).toBeGreaterThan(0);
  });

  it('streams a Bash tool_use with input_json_delta and stop_reason tool_use', async () => {
    const r = await postJson(server.url + paths.anthropic, bodies.anthropic('[[cal:shell=echo hi]]'));
    const frames = sseFrames(r.text);
    const block = json(frames[1]!).content_block as Record<string, unknown>;
    expect(block).toMatchObject({ type: 'tool_use', name: 'Bash', input: {} });
    expect(String(block.id)).toMatch(/^toolu_/);
    const partial = frames
      .filter((f) => f.event === 'content_block_delta')
      .map((f) => json(f).delta as { type: string; partial_json: string })
      .map((d) => {
        expect(d.type).toBe('input_json_delta');
        return d.partial_json;
      })
      .join('');
    expect(JSON.parse(partial)).toEqual({ command: 'echo hi', description: 'Run: echo hi' });
    expect((json(frames.at(-2)!).delta as { stop_reason: string }).stop_reason).toBe('tool_use');
    expect(frames.at(-1)!.event).toBe('message_stop');
  });

  it('answers stream:false with one message object', async () => {
    const r = await postJson(server.url + paths.anthropic, bodies.anthropic('[[cal:reply=plain]]', { stream: false }));
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(JSON.parse(r.text)).toMatchObject({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'text', text: 'plain' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: expect.any(Number), output_tokens: expect.any(Number) },
    });
  });

  it('answers the title side request as the structured output it asks for', async () => {
    const body = bodies.anthropic('<session>\nfix the login bug\n</session>\n\nWrite the title in the predominant language of the session', {
      tools: [],
      stream: false,
      output_config: { effort: 'medium', format: { type: 'json_schema', schema: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] } } },
    });
    server.clearLog();
    const r = await postJson(server.url + paths.anthropic, body);
    const text = (JSON.parse(r.text) as { content: Array<{ text: string }> }).content[0]!.text;
    expect(JSON.parse(text)).toEqual({ title: 'Scripted model session' });
    expect(server.requests()[0]).toMatchObject({ side: true, dialect: 'anthropic' });
  });

  it('ends a [[cal:fail]] stream with an error event', async () => {
    const frames = sseFrames((await postJson(server.url + paths.anthropic, bodies.anthropic('x [[cal:fail]] [[cal:chunks=4]]'))).text);
    expect(frames.map((f) => f.event)).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'content_block_delta', 'error']);
    expect(json(frames.at(-1)!)).toEqual({ type: 'error', error: { type: 'overloaded_error', message: 'Mock stream failure' } });
  });
});

describe('OpenAI Responses', () => {
  it('streams response.created … response.completed with increasing sequence numbers', async () => {
    const r = await postJson(server.url + paths.responses, bodies.responses('hello [[cal:chunks=3]]'));
    const frames = sseFrames(r.text);
    expect(frames.map((f) => f.event)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    frames.forEach((f, i) => {
      expect(json(f).type).toBe(f.event);
      expect(json(f).sequence_number).toBe(i);
    });
    const text = frames.filter((f) => f.event === 'response.output_text.delta').map((f) => json(f).delta).join('');
    expect(text).toBe('Received: hello');
    expect(json(frames[7]!).text).toBe('Received: hello');
    const done = json(frames[9]!).item;
    expect(done).toMatchObject({ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Received: hello' }] });
    const completed = json(frames[10]!).response as Record<string, unknown>;
    expect(completed).toMatchObject({ object: 'response', status: 'completed', output: [done] });
    expect(completed.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number), total_tokens: expect.any(Number) });
  });

  it('streams an exec_command function_call with {"cmd": …}', async () => {
    const frames = sseFrames((await postJson(server.url + paths.responses, bodies.responses('[[cal:shell=ls]]'))).text);
    expect(frames.map((f) => f.event)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const item = json(frames[7]!).item as Record<string, unknown>;
    expect(item).toMatchObject({ type: 'function_call', name: 'exec_command', status: 'completed', arguments: '{"cmd":"ls"}' });
    expect(String(item.call_id)).toMatch(/^call_/);
    expect(item.namespace).toBeUndefined();
  });

  it('calls an MCP tool offered in a namespace as name + namespace', async () => {
    const tools = [
      { type: 'function', name: 'exec_command', parameters: {} },
      { type: 'namespace', name: 'mcp__probe', tools: [{ type: 'function', name: 'echo', parameters: {} }] },
    ];
    const frames = sseFrames((await postJson(server.url + paths.responses, bodies.responses('[[cal:mcp=probe.echo {"text":"t"}]]', { tools }))).text);
    const item = json(frames.find((f) => f.event === 'response.output_item.done')!).item;
    expect(item).toMatchObject({ type: 'function_call', name: 'echo', namespace: 'mcp__probe', arguments: '{"text":"t"}' });
  });

  it('ends a [[cal:fail]] stream with response.failed', async () => {
    const frames = sseFrames((await postJson(server.url + paths.responses, bodies.responses('x [[cal:fail]]'))).text);
    const last = json(frames.at(-1)!);
    expect(last.type).toBe('response.failed');
    expect(last.response).toMatchObject({ status: 'failed', error: { code: 'server_error', message: 'Mock response.failed' } });
    expect(frames.some((f) => f.event === 'response.completed')).toBe(false);
  });

  it('answers stream:false with the response object', async () => {
    const r = await postJson(server.url + paths.responses, bodies.responses('[[cal:reply=done]]', { stream: false }));
    expect(JSON.parse(r.text)).toMatchObject({ object: 'response', status: 'completed', output: [{ type: 'message', content: [{ type: 'output_text', text: 'done' }] }] });
  });
});

describe('OpenAI Chat Completions', () => {
  it('streams role, content deltas, a finish chunk, a usage chunk and [DONE]', async () => {
    const frames = sseFrames((await postJson(server.url + paths.chat, bodies.chat('[[cal:reply=abcdef]] [[cal:chunks=3]]'))).text);
    expect(frames.every((f) => f.event === null)).toBe(true);
    expect(frames.at(-1)!.data).toBe('[DONE]');
    const chunks = frames.slice(0, -1).map(json);
    for (const c of chunks) expect(c).toMatchObject({ object: 'chat.completion.chunk', model: 'mock-model' });
    expect(chunks[0]!.choices).toEqual([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
    const content = chunks.slice(1, 4).map((c) => (c.choices as Array<{ delta: { content: string } }>)[0]!.delta.content);
    expect(content).toEqual(['ab', 'cd', 'ef']);
    expect(chunks[4]!.choices).toEqual([{ index: 0, delta: {}, finish_reason: 'stop' }]);
    expect(chunks[5]).toMatchObject({ choices: [], usage: { prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), total_tokens: expect.any(Number) } });
  });

  it('sends no usage chunk unless stream_options.include_usage is set', async () => {
    const frames = sseFrames((await postJson(server.url + paths.chat, bodies.chat('hi', { stream_options: undefined }))).text);
    expect(frames.slice(0, -1).map(json).some((c) => 'usage' in c)).toBe(false);
  });

  it('streams a bash tool call with finish_reason tool_calls', async () => {
    const frames = sseFrames((await postJson(server.url + paths.chat, bodies.chat('[[cal:shell=echo pi]]'))).text);
    const chunks = frames.slice(0, -1).map(json);
    const calls = chunks.flatMap((c) => (c.choices as Array<{ delta: { tool_calls?: Array<Record<string, unknown>> } }>)[0]?.delta.tool_calls ?? []);
    expect(calls[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'bash', arguments: '' } });
    expect(String(calls[0]!.id)).toMatch(/^call_/);
    const args = calls.map((c) => (c.function as { arguments: string }).arguments).join('');
    expect(JSON.parse(args)).toEqual({ command: 'echo pi' });
    expect(chunks.find((c) => (c.choices as Array<{ finish_reason: string | null }>)[0]?.finish_reason)?.choices).toEqual([
      { index: 0, delta: {}, finish_reason: 'tool_calls' },
    ]);
  });

  it('ends a [[cal:fail]] stream with an error object and no [DONE]', async () => {
    const frames = sseFrames((await postJson(server.url + paths.chat, bodies.chat('x [[cal:fail]]'))).text);
    expect(json(frames.at(-1)!)).toEqual({ error: { message: 'Mock stream failure', type: 'server_error', param: null, code: null } });
    expect(frames.some((f) => f.data === '[DONE]')).toBe(false);
  });

  it('answers stream:false with a chat.completion', async () => {
    const r = await postJson(server.url + paths.chat, bodies.chat('[[cal:shell=ls]]', { stream: false }));
    expect(JSON.parse(r.text)).toMatchObject({
      object: 'chat.completion',
      choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: null, tool_calls: [{ type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } }] } }],
    });
  });
});

describe('Gemini', () => {
  it('streams data: chunks separated by CRLF CRLF, finishReason and usage only in the last', async () => {
    const r = await postJson(server.url + paths.geminiStream, bodies.gemini('[[cal:reply=one two three]] [[cal:chunks=3]]'));
    expect(r.status).toBe(200);
    const raw = r.text.split('\r\n\r\n');
    expect(raw.at(-1)).toBe('');
    const chunks = raw.slice(0, -1).map((f) => {
      expect(f.startsWith('data: ')).toBe(true);
      return JSON.parse(f.slice(6)) as { candidates: Array<Record<string, unknown>>; usageMetadata?: unknown; modelVersion: string };
    });
    expect(chunks).toHaveLength(3);
    const text = chunks.map((c) => ((c.candidates[0]!.content as { parts: Array<{ text: string }> }).parts[0]!.text)).join('');
    expect(text).toBe('one two three');
    for (const c of chunks.slice(0, -1)) {
      expect(c.candidates[0]!.finishReason).toBeUndefined();
      expect(c.usageMetadata).toBeUndefined();
    }
    const last = chunks.at(-1)!;
    expect(last.candidates[0]).toMatchObject({ finishReason: 'STOP', index: 0, content: { role: 'model' } });
    expect(last.usageMetadata).toMatchObject({ promptTokenCount: expect.any(Number), candidatesTokenCount: expect.any(Number), totalTokenCount: expect.any(Number) });
    expect(last.modelVersion).toBe('gemini-2.5-flash');
  });

  it('streams a run_shell_command functionCall', async () => {
    const r = await postJson(server.url + paths.geminiStream, bodies.gemini('[[cal:shell=echo g]]'));
    const chunks = r.text.split('\r\n\r\n').filter(Boolean).map((f) => JSON.parse(f.slice(6)) as { candidates: Array<Record<string, unknown>> });
    expect(chunks).toHaveLength(1);
    expect(chunks[0]!.candidates[0]).toMatchObject({
      content: { role: 'model', parts: [{ functionCall: { name: 'run_shell_command', args: { command: 'echo g' } } }] },
      finishReason: 'STOP',
    });
  });

  it('answers :generateContent with plain JSON and marks it as a side request', async () => {
    server.clearLog();
    const r = await postJson(server.url + paths.geminiJson, bodies.gemini('Summarize the session'));
    expect(JSON.parse(r.text)).toMatchObject({ candidates: [{ content: { role: 'model', parts: [{ text: 'Scripted model session' }] }, finishReason: 'STOP' }] });
    const [entry] = server.requests();
    expect(entry).toMatchObject({ dialect: 'gemini', side: true });
    expect(server.turnRequests()).toEqual([]);
  });

  it('answers a JSON-mode utility call with JSON text of its schema', async () => {
    const schema = { type: 'object', properties: { reasoning: { type: 'string' }, next_speaker: { type: 'string', enum: ['model', 'user'] } } };
    const r = await postJson(server.url + paths.geminiJson, bodies.gemini('who speaks next?', { generationConfig: { responseMimeType: 'application/json', responseJsonSchema: schema } }));
    const text = (JSON.parse(r.text) as { candidates: Array<{ content: { parts: Array<{ text: string }> } }> }).candidates[0]!.content.parts[0]!.text;
    expect(JSON.parse(text)).toEqual({ reasoning: 'scripted', next_speaker: 'user' });
  });

  it('ends a [[cal:fail]] stream with a bare JSON error object, as the real API does', async () => {
    const r = await postJson(server.url + paths.geminiStream, bodies.gemini('x [[cal:fail]] [[cal:chunks=4]]'));
    expect(r.text.endsWith('{"error":{"code":500,"message":"Mock stream failure","status":"INTERNAL"}}')).toBe(true);
    expect(r.text.split('\r\n\r\n')).toHaveLength(3);
  });

  it('counts tokens', async () => {
    const r = await postJson(server.url + '/v1beta/models/gemini-2.5-flash:countTokens', { contents: [] });
    expect(JSON.parse(r.text)).toEqual({ totalTokens: expect.any(Number) });
  });
});

describe('fidelity of [[cal:echo]] across dialects (property)', () => {
  function reassemble(kind: 'anthropic' | 'responses' | 'chat' | 'gemini', text: string): string {
    if (kind === 'gemini') {
      return text
        .split('\r\n\r\n')
        .filter(Boolean)
        .map((f) => (JSON.parse(f.slice(6)) as { candidates: Array<{ content: { parts: Array<{ text: string }> } }> }).candidates[0]!.content.parts[0]!.text)
        .join('');
    }
    const frames = sseFrames(text).filter((f) => f.data !== '[DONE]').map(json);
    if (kind === 'anthropic') return frames.filter((f) => f.type === 'content_block_delta').map((f) => (f.delta as { text: string }).text).join('');
    if (kind === 'responses') return frames.filter((f) => f.type === 'response.output_text.delta').map((f) => f.delta as string).join('');
    return frames.map((f) => (f.choices as Array<{ delta: { content?: string } }>)[0]?.delta.content ?? '').join('');
  }

  it('returns the exact user text (unicode, newlines, quotes) in every dialect', async () => {
    const path = { anthropic: paths.anthropic, responses: paths.responses, chat: paths.chat, gemini: paths.geminiStream } as const;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('anthropic' as const, 'responses' as const, 'chat' as const, 'gemini' as const),
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 60 }).map((s) => `${s}\n"q" 'q' ✓ 日本 👩‍👩‍👧`),
        fc.integer({ min: 1, max: 12 }),
        async (kind, text, chunks) => {
          const r = await postJson(server.url + path[kind], bodies[kind](`[[cal:echo]][[cal:chunks=${chunks}]]${text}`));
          expect(reassemble(kind, r.text)).toBe(text.trim());
        },
      ),
      { numRuns: 60 },
    );
  });
});
