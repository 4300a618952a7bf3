/** The server itself: routing, bad input, HTTP-level directives, timing, binding and shutdown (the request log: server-log.test.ts). */
import http from 'node:http';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_REQUEST_BYTES, isLoopbackHost, startModelServer } from '../../src/model/server.js';
import { bodies, json, paths, postJson, request, sseFrames } from './helpers.js';
import { server } from './per-file-server.js';

const anthropicShape = { type: 'error', error: { type: expect.any(String), message: expect.any(String) } };
const openAiShape = { error: { message: expect.any(String), type: expect.any(String), param: null } };
const geminiShape = { error: { code: expect.any(Number), message: expect.any(String), status: expect.any(String) } };

describe('routing and bad input', () => {
  it('binds loopback and reports a base URL without a trailing slash or /v1', () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.url.endsWith(`:${server.port}`)).toBe(true);
  });

  it('answers HEAD /api/hello with 200 and no body', async () => {
    const r = await request(`${server.url}/api/hello`, { method: 'HEAD' });
    expect(r.status).toBe(200);
    expect(r.text).toBe('');
    expect((await request(`${server.url}/api/hello`)).status).toBe(200);
    const post = await request(`${server.url}/api/hello`, { method: 'POST', body: '{}' });
    expect(post.status).toBe(405);
    expect(JSON.parse(post.text)).toMatchObject(anthropicShape);
  });

  it('lists models in the shape each client asks for', async () => {
    const openai = JSON.parse((await request(`${server.url}/v1/models`)).text);
    expect(openai).toMatchObject({ object: 'list', data: [{ id: 'scripted-model', object: 'model' }] });
    const anth = JSON.parse((await request(`${server.url}/v1/models`, { headers: { 'anthropic-version': '2023-06-01' } })).text);
    expect(anth).toMatchObject({ data: [{ type: 'model', id: 'scripted-model' }], has_more: false });
    const gem = JSON.parse((await request(`${server.url}/v1beta/models`)).text);
    expect(gem).toMatchObject({ models: [{ name: 'models/scripted-model' }] });
    expect(JSON.parse((await request(`${server.url}/v1/models/x-1`)).text)).toMatchObject({ id: 'x-1', object: 'model' });
  });

  it('answers unknown paths with 404 in the most likely dialect', async () => {
    const a = await request(`${server.url}/v1/messages/batches`, { method: 'POST', body: '{}' });
    expect(a.status).toBe(404);
    expect(JSON.parse(a.text)).toEqual({ type: 'error', error: { type: 'not_found_error', message: 'Not found: POST /v1/messages/batches' } });
    const g = await request(`${server.url}/v1beta/files`);
    expect(g.status).toBe(404);
    expect(JSON.parse(g.text)).toMatchObject({ error: { code: 404, status: 'NOT_FOUND' } });
    const o = await request(`${server.url}/nothing/here`);
    expect(o.status).toBe(404);
    expect(JSON.parse(o.text)).toMatchObject({ error: { type: 'invalid_request_error', code: 'not_found' } });
    const unknownAction = await postJson(`${server.url}/v1beta/models/m:embedContent`, {});
    expect(unknownAction.status).toBe(404);
    expect(JSON.parse(unknownAction.text)).toMatchObject(geminiShape);
  });

  it('answers a wrong method with 405, an Allow header and the dialect error body', async () => {
    for (const [p, shape] of [
      ['/v1/messages', anthropicShape],
      ['/v1/responses', openAiShape],
      ['/v1/chat/completions', openAiShape],
      ['/v1beta/models/gemini-2.5-flash:streamGenerateContent', geminiShape],
    ] as const) {
      const r = await request(server.url + p);
      expect(r.status, p).toBe(405);
      expect(r.headers.get('allow')).toBe('POST');
      expect(JSON.parse(r.text)).toMatchObject(shape);
    }
  });

  it('answers malformed JSON and wrongly shaped bodies with 400 in the dialect shape', async () => {
    for (const [p, shape] of [
      [paths.anthropic, anthropicShape],
      [paths.responses, openAiShape],
      [paths.chat, openAiShape],
      [paths.geminiStream, geminiShape],
    ] as const) {
      const bad = await postJson(server.url + p, '{"messages": [');
      expect(bad.status, p).toBe(400);
      expect(JSON.parse(bad.text)).toMatchObject(shape);
      const wrong = await postJson(server.url + p, [1, 2]);
      expect(wrong.status, p).toBe(400);
      expect(JSON.parse(wrong.text)).toMatchObject(shape);
      const missing = await postJson(server.url + p, { model: 'x' });
      expect(missing.status, p).toBe(400);
    }
    expect(JSON.parse((await postJson(server.url + paths.anthropic, '{')).text).error.type).toBe('invalid_request_error');
    // Bad requests are logged, but not as turns.
    expect(server.requests().every((e) => e.dialect === 'none' && e.status === 400)).toBe(true);
    expect(server.turnRequests()).toEqual([]);
  });

  it('survives garbage on the socket and keeps serving', async () => {
    await new Promise<void>((resolve) => {
      const s = net.connect(server.port, '127.0.0.1', () => s.write('\x00\x01 NOT HTTP\r\n\r\n'));
      s.on('data', () => undefined);
      s.on('close', () => resolve());
      s.on('error', () => resolve());
    });
    expect((await request(`${server.url}/api/hello`)).status).toBe(200);
  });

  it('survives a client that disconnects during a delay and mid-stream', async () => {
    const ac = new AbortController();
    const pending = fetch(server.url + paths.anthropic, {
      method: 'POST',
      body: JSON.stringify(bodies.anthropic('[[cal:delay=300]]')),
      signal: ac.signal,
    }).catch((e: Error) => e);
    await new Promise((r) => setTimeout(r, 50));
    ac.abort();
    expect(await pending).toBeInstanceOf(Error);

    const res = await fetch(server.url + paths.chat, { method: 'POST', body: JSON.stringify(bodies.chat('[[cal:chunks=20]][[cal:chunk-delay=30]] long')) });
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel();
    await new Promise((r) => setTimeout(r, 100));
    const after = await postJson(server.url + paths.chat, bodies.chat('still there?'));
    expect(after.status).toBe(200);
  });

  it('rejects a body over the size cap with 413 in the dialect shape', async () => {
    expect(DEFAULT_MAX_REQUEST_BYTES).toBe(32 * 1024 * 1024);
    const small = await startModelServer({ maxRequestBytes: 2048 });
    try {
      const big = bodies.anthropic('x'.repeat(64 * 1024));
      const r = await postJson(small.url + paths.anthropic, big);
      expect(r.status).toBe(413);
      expect(JSON.parse(r.text)).toEqual({ type: 'error', error: { type: 'request_too_large', message: 'Request body exceeds 2048 bytes' } });
      const g = await postJson(small.url + paths.geminiStream, bodies.gemini('y'.repeat(64 * 1024)));
      expect(g.status).toBe(413);
      expect(JSON.parse(g.text)).toMatchObject(geminiShape);
      // Chunked upload without content-length is cut off as it streams in.
      const chunked = await request(small.url + paths.chat, {
        method: 'POST',
        body: new ReadableStream({
          start(c) {
            for (let i = 0; i < 8; i++) c.enqueue(new TextEncoder().encode('z'.repeat(1024)));
            c.close();
          },
        }),
        duplex: 'half',
      } as RequestInit);
      expect(chunked.status).toBe(413);
      expect((await postJson(small.url + paths.anthropic, bodies.anthropic('ok'))).status).toBe(200);
      expect(small.requests().map((e) => e.status)).toEqual([413, 413, 413, 200]);
    } finally {
      await small.close();
    }
  });
});

describe('HTTP directives', () => {
  const cases = [
    { name: 'anthropic', path: paths.anthropic, body: bodies.anthropic },
    { name: 'responses', path: paths.responses, body: bodies.responses },
    { name: 'chat', path: paths.chat, body: bodies.chat },
    { name: 'gemini', path: paths.geminiStream, body: bodies.gemini },
  ] as const;

  it.each(cases)('[[cal:http=N]] answers status N with the $name error body', async ({ name, path: p, body }) => {
    for (const status of [400, 429, 500, 503, 529]) {
      const r = await postJson(server.url + p, body(`fail please [[cal:http=${status}]]`));
      expect(r.status).toBe(status);
      const b = JSON.parse(r.text);
      if (name === 'anthropic') {
        expect(r.headers.get('x-should-retry')).toBe('false');
        const type = { 400: 'invalid_request_error', 429: 'rate_limit_error', 500: 'api_error', 503: 'api_error', 529: 'overloaded_error' }[status];
        expect(b).toEqual({ type: 'error', error: { type, message: expect.any(String) } });
      } else if (name === 'gemini') {
        const st = { 400: 'INVALID_ARGUMENT', 429: 'RESOURCE_EXHAUSTED', 500: 'INTERNAL', 503: 'UNAVAILABLE', 529: 'INTERNAL' }[status];
        expect(b).toEqual({ error: { code: status, message: expect.any(String), status: st } });
      } else {
        expect(b).toMatchObject(openAiShape);
        if (status >= 500) expect(b.error.type).toBe('server_error');
      }
    }
    expect(server.turnRequests().map((e) => e.status)).toEqual([400, 429, 500, 503, 529]);
    expect(server.turnRequests()[0]!.directives).toEqual(['http=400']);
  });

  it('Anthropic 500 carries the documented message', async () => {
    const r = await postJson(server.url + paths.anthropic, bodies.anthropic('[[cal:http=500]]'));
    expect(JSON.parse(r.text)).toEqual({ type: 'error', error: { type: 'api_error', message: 'Mock internal server error' } });
  });

  it.each(cases)('[[cal:break]] cuts the $name stream midway', async ({ path: p, body }) => {
    const r = await postJson(server.url + p, body('break it [[cal:break]] [[cal:chunks=6]]'));
    expect(r.status).toBe(200);
    expect(r.bodyError).not.toBeNull();
    const text = r.text;
    expect(text.length).toBeGreaterThan(0);
    expect(text).not.toMatch(/message_stop|response\.completed|\[DONE\]|"finishReason"/);
  });

  it('[[cal:break]] and [[cal:fail]] on a non-streaming request: dropped connection / 500', async () => {
    await expect(postJson(server.url + paths.anthropic, bodies.anthropic('[[cal:break]]', { stream: false }))).rejects.toThrow();
    const failed = await postJson(server.url + paths.anthropic, bodies.anthropic('[[cal:fail]]', { stream: false }));
    expect(failed.status).toBe(500);
    expect(JSON.parse(failed.text)).toMatchObject(anthropicShape);
  });

  it('[[cal:delay=MS]] holds the first byte back', async () => {
    const t0 = Date.now();
    const res = await fetch(server.url + paths.responses, { method: 'POST', body: JSON.stringify(bodies.responses('[[cal:delay=300]] hi')) });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    await res.text();
    // The request is logged when it arrives, before the delay.
    const logged = fetch(server.url + paths.chat, { method: 'POST', body: JSON.stringify(bodies.chat('[[cal:delay=400]] slow')) });
    await new Promise((r) => setTimeout(r, 100));
    expect(server.requests().at(-1)).toMatchObject({ dialect: 'openai-chat', lastUserMessage: '[[cal:delay=400]] slow', reply: 'Received: slow' });
    await (await logged).text();
  });

  it('[[cal:chunk-delay=MS]] paces the deltas', async () => {
    const res = await fetch(server.url + paths.anthropic, {
      method: 'POST',
      body: JSON.stringify(bodies.anthropic('[[cal:reply=abcd]][[cal:chunks=4]][[cal:chunk-delay=120]]')),
    });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    const times: number[] = [];
    let buf = '';
    const t0 = Date.now();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      const n = (buf.match(/text_delta/g) ?? []).length;
      while (times.length < n) times.push(Date.now() - t0);
    }
    expect(times).toHaveLength(4);
    for (let i = 1; i < 4; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(100);
    const text = sseFrames(buf).filter((f) => f.event === 'content_block_delta').map((f) => (json(f).delta as { text: string }).text);
    expect(text).toEqual(['a', 'b', 'c', 'd']);
  });

  it('[[cal:lines=N]] answers N numbered unicode lines', async () => {
    const r = await postJson(server.url + paths.responses, bodies.responses('[[cal:lines=200]]', { stream: false }));
    const text = (JSON.parse(r.text) as { output: Array<{ content: Array<{ text: string }> }> }).output[0]!.content[0]!.text;
    const lines = text.split('\n');
    expect(lines).toHaveLength(200);
    expect(lines[199]).toBe('200/200 ünïcödé ✓ 日本語 — “quotes” & <tags> 🚀');
  });

  it('a tool directive answers with the tool call, then with the result once the history holds it', async () => {
    const first = await postJson(server.url + paths.anthropic, bodies.anthropic('[[cal:shell=printf "a\\nb"]]', { stream: false }));
    const use = (JSON.parse(first.text) as { content: Array<{ id: string; input: unknown }> }).content[0]!;
    expect(use.input).toEqual({ command: 'printf "a\\nb"', description: 'Run: printf "a\\nb"' });
    const followUp = bodies.anthropic('[[cal:shell=printf "a\\nb"]]', { stream: false });
    (followUp.messages as unknown[]).push(
      { role: 'assistant', content: [{ type: 'tool_use', id: use.id, name: 'Bash', input: use.input }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'a\nb' }] },
    );
    const second = await postJson(server.url + paths.anthropic, followUp);
    expect(JSON.parse(second.text)).toMatchObject({ content: [{ type: 'text', text: 'Tool finished: a' }], stop_reason: 'end_turn' });
  });

  it('uses deterministic ids derived from the request', async () => {
    const a = JSON.parse((await postJson(server.url + paths.anthropic, bodies.anthropic('same', { stream: false }))).text);
    const b = JSON.parse((await postJson(server.url + paths.anthropic, bodies.anthropic('same', { stream: false }))).text);
    expect(a).toEqual(b);
  });
});

describe('binding and shutdown', () => {
  it('refuses a non-loopback host unless allowRemote is set', async () => {
    await expect(startModelServer({ host: '0.0.0.0' })).rejects.toThrow(/non-loopback/);
    const remote = await startModelServer({ host: '0.0.0.0', allowRemote: true });
    expect(remote.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
    await remote.close();
    expect(isLoopbackHost('127.0.0.1')).toBe(true);
    expect(isLoopbackHost('127.1.2.3')).toBe(true);
    expect(isLoopbackHost('::1')).toBe(true);
    expect(isLoopbackHost('[::1]')).toBe(true);
    expect(isLoopbackHost('localhost')).toBe(true);
    expect(isLoopbackHost('10.0.0.1')).toBe(false);
    expect(isLoopbackHost('::')).toBe(false);
  });

  it('keeps an idle keep-alive connection open past Node\'s 5 s default, so a pooled client never sends on a socket it closed', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const hello = () =>
      new Promise<boolean>((resolve, reject) => {
        const req = http.get(`${server.url}/api/hello`, { agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(req.reusedSocket));
        });
        req.on('error', reject);
      });
    try {
      expect(await hello()).toBe(false);
      await new Promise((r) => setTimeout(r, 6000));
      expect(await hello()).toBe(true);
    } finally {
      agent.destroy();
    }
  }, 15_000);

  it('close() ends in-flight delayed requests promptly', async () => {
    const s = await startModelServer();
    const pending = postJson(s.url + paths.anthropic, bodies.anthropic('[[cal:delay=60000]]')).catch((e: Error) => e);
    await new Promise((r) => setTimeout(r, 50));
    const t0 = Date.now();
    await s.close();
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(await pending).toBeInstanceOf(Error);
    await s.close(); // idempotent
  });
});
