/** The scripted model's request log: what is a turn and what a side request, what each entry records, its limits. */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startModelServer } from '../../src/model/server.js';
import { bodies, paths, postJson, request } from './helpers.js';
import { dir, logFile, server } from './per-file-server.js';

describe('request log', () => {
  it("Claude Code 2.0.x's git-history request (five frequently modified files) is a side request, not a turn", async () => {
    const before = server.turnRequests().length;
    await postJson(
      server.url + paths.anthropic,
      bodies.anthropic('Files modified by user:\n\n\nFiles modified by other users:\n', {
        tools: [],
        system: [{ type: 'text', text: 'You are an expert at analyzing git history. Given a list of files and their modification counts, return exactly five filenames …' }],
      }),
    );
    expect(server.requests().at(-1)).toMatchObject({ dialect: 'anthropic', side: true });
    expect(server.turnRequests()).toHaveLength(before);
  });

  it("OpenCode's title request (no tools, 'Generate a title for this conversation:' then the prompt) is a side request, not a turn", async () => {
    const before = server.turnRequests().length;
    const res = await postJson(server.url + '/v1/chat/completions', {
      model: 'scripted-model',
      stream: false,
      messages: [
        { role: 'system', content: 'You are a title generator. You output ONLY a thread title.' },
        { role: 'user', content: 'Generate a title for this conversation:\n' },
        { role: 'user', content: 'Remember the codeword KIWI.' },
      ],
    });
    expect(res.status).toBe(200);
    expect(server.requests().at(-1)).toMatchObject({ dialect: 'openai-chat', side: true });
    expect(server.turnRequests()).toHaveLength(before);
    // The same prompt as a turn (tools offered, no title instruction) stays a turn.
    await postJson(server.url + '/v1/chat/completions', {
      model: 'scripted-model',
      stream: false,
      tools: [{ type: 'function', function: { name: 'bash', parameters: {} } }],
      messages: [{ role: 'user', content: 'Remember the codeword KIWI.' }],
    });
    expect(server.turnRequests()).toHaveLength(before + 1);
  });

  it("calls an MCP tool by OpenCode's name for it (<server>_<tool>)", async () => {
    const res = await postJson(server.url + '/v1/chat/completions', {
      model: 'scripted-model',
      stream: false,
      tools: [
        { type: 'function', function: { name: 'bash', parameters: {} } },
        { type: 'function', function: { name: 'calprobe_echo', parameters: {} } },
      ],
      messages: [{ role: 'user', content: 'Call it [[cal:mcp=calprobe.echo {"text":"hi"}]]' }],
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text).choices[0].message.tool_calls[0].function).toMatchObject({ name: 'calprobe_echo', arguments: '{"text":"hi"}' });
  });

  it('records dialect, session key, user messages, side flag and reply; JSONL mirrors it', async () => {
    const claudeMeta = { user_id: JSON.stringify({ device_id: 'd', account_uuid: '', session_id: '11111111-2222-3333-4444-555555555555' }) };
    await postJson(
      server.url + paths.anthropic,
      bodies.anthropic('Remember the codeword KIWI.', {
        metadata: claudeMeta,
        messages: [
          { role: 'user', content: [{ type: 'text', text: '<system-reminder>\nattribution\n</system-reminder>' }, { type: 'text', text: 'first' }] },
          { role: 'system', content: '# Environment' },
          { role: 'assistant', content: [{ type: 'text', text: 'ok' }] },
          { role: 'user', content: 'Remember the codeword KIWI.' },
        ],
      }),
    );
    await postJson(server.url + paths.anthropic, bodies.anthropic('<session>\nhi\n</session>\n\nWrite the title for this session', { tools: [] }));
    await postJson(server.url + paths.responses, bodies.responses('hello codex'), { 'session-id': 'thread-1', 'x-codex-turn-metadata': '{"thread_source":"user"}' });
    await postJson(server.url + paths.responses, bodies.responses('Generate a concise, single-line task title for: x', { tools: [] }), {
      'session-id': 'title-thread',
      'x-codex-turn-metadata': '{"thread_source":"thread_title"}',
    });
    await postJson(server.url + paths.chat, bodies.chat('hi pi'));
    await postJson(server.url + paths.geminiStream, bodies.gemini('hi gemini'));
    await request(`${server.url}/api/hello`, { method: 'HEAD' });

    const log = server.requests();
    expect(log.map((e) => [e.dialect, e.side, e.sessionKey])).toEqual([
      ['anthropic', false, '11111111-2222-3333-4444-555555555555'],
      ['anthropic', true, null],
      ['openai-responses', false, 'thread-1'],
      ['openai-responses', true, 'title-thread'],
      ['openai-chat', false, null],
      ['gemini', false, null],
      ['none', false, null],
    ]);
    expect(log[0]).toMatchObject({
      method: 'POST',
      path: '/v1/messages',
      status: 200,
      userMessages: ['first', 'Remember the codeword KIWI.'],
      lastUserMessage: 'Remember the codeword KIWI.',
      reply: 'OK, I will remember the codeword KIWI.',
      directives: [],
      model: 'claude-test',
    });
    expect(log[1]!.reply).toBe('Scripted model session');
    expect(log[2]!.userMessages).toEqual(['hello codex']);
    expect(log[5]!.userMessages).toEqual(['hi gemini']);
    for (let i = 1; i < log.length; i++) expect(log[i]!.seq).toBeGreaterThan(log[i - 1]!.seq);
    for (const e of log) expect(new Date(e.time).toISOString()).toBe(e.time);
    expect(server.turnRequests().map((e) => e.dialect)).toEqual(['anthropic', 'openai-responses', 'openai-chat', 'gemini']);

    const fileEntries = (await readFile(logFile(), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { seq: number });
    const bySeq = new Map(fileEntries.map((e) => [e.seq, e]));
    for (const e of log) expect(bySeq.get(e.seq)).toEqual(e);
  });

  it('takes the Claude session from the older user_id format or the header', async () => {
    await postJson(server.url + paths.anthropic, bodies.anthropic('a', { metadata: { user_id: 'user_abc_account__session_aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee' } }));
    await postJson(server.url + paths.anthropic, bodies.anthropic('b'), { 'x-claude-code-session-id': 'hdr-session' });
    expect(server.requests().map((e) => e.sessionKey)).toEqual(['aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee', 'hdr-session']);
  });

  it('keeps at most maxLogEntries in memory, every entry in the file', async () => {
    const file = path.join(dir, 'capped.jsonl');
    const s = await startModelServer({ maxLogEntries: 2, logFile: file });
    try {
      for (const t of ['a', 'b', 'c']) await postJson(s.url + paths.chat, bodies.chat(t));
      expect(s.requests().map((e) => e.lastUserMessage)).toEqual(['b', 'c']);
      expect((await readFile(file, 'utf8')).trim().split('\n')).toHaveLength(3);
    } finally {
      await s.close();
    }
  });

  it('clearLog empties the in-process log', async () => {
    await postJson(server.url + paths.chat, bodies.chat('x'));
    expect(server.requests()).toHaveLength(1);
    server.clearLog();
    expect(server.requests()).toEqual([]);
  });
});
