import { describe, expect, it } from 'vitest';
import { codewordIn, conversationalAnswer, numberedLines, planReply, SIDE_TITLE } from '../../src/model/reply.js';
import { firstOutputLine, splitText, synthesizeFromSchema, userOwnText } from '../../src/model/text.js';
import { resolveWith } from '../../src/model/tools.js';
import type { ConversationItem, ParsedModelRequest } from '../../src/model/types.js';
import fc from 'fast-check';

function req(items: ConversationItem[], extra: Partial<ParsedModelRequest> = {}): ParsedModelRequest {
  return { dialect: 'anthropic', model: 'm', stream: true, items, tools: [], sessionKey: null, side: null, inputChars: 10, ...extra };
}
const user = (text: string): ConversationItem => ({ kind: 'user', text });
const assistant = (text: string): ConversationItem => ({ kind: 'assistant', text });

describe('conversation answers', () => {
  it('acknowledges a codeword', () => {
    expect(planReply(req([user('Please remember the codeword Mango42 now.')])).text).toBe('OK, I will remember the codeword Mango42.');
    expect(planReply(req([user('REMEMBER CODEWORD ZEBRA')])).text).toBe('OK, I will remember the codeword ZEBRA.');
  });

  it('recalls a codeword only from an earlier user turn of the same request', () => {
    const history = [user('Remember the codeword KIWI.'), assistant('OK, I will remember the codeword KIWI.'), user('What was the codeword?')];
    expect(planReply(req(history)).text).toBe('The codeword was KIWI.');
    expect(planReply(req([user('What was the codeword?')])).text).toBe('I do not know the codeword.');
    // Named in the assistant's words only: not recalled.
    expect(planReply(req([user('hi'), assistant('the codeword KIWI'), user('What was the codeword?')])).text).toBe('I do not know the codeword.');
    // Named in the same (last) message: not an earlier turn.
    expect(planReply(req([user('codeword KIWI. What was the codeword?')])).text).toBe('I do not know the codeword.');
  });

  it('recalls the latest codeword and ignores earlier recall questions', () => {
    const history = [user('remember the codeword ONE'), user('remember the codeword TWO'), user('what was the codeword?'), user('What was the codeword again?')];
    expect(planReply(req(history)).text).toBe('The codeword was TWO.');
    expect(codewordIn('what was the codeword again')).toBeNull();
    expect(codewordIn('the codeword is LIME')).toBe('LIME');
    expect(codewordIn('CODEWORD=KIWI remember it')).toBe('KIWI');
  });

  it('answers anything else with a short deterministic echo', () => {
    expect(conversationalAnswer('hello   there\nfriend', [])).toBe('Received: hello there friend');
    expect(conversationalAnswer('x'.repeat(100), [])).toBe(`Received: ${'x'.repeat(60)}`);
    expect(conversationalAnswer('   ', [])).toBe('Received an empty message.');
    expect(planReply(req([])).text).toBe('Hello from the scripted model.');
  });

  it('lists every user message and the last one', () => {
    const p = planReply(req([user('a'), assistant('b'), user('c')]));
    expect(p.userMessages).toEqual(['a', 'c']);
    expect(p.lastUserMessage).toBe('c');
  });
});

describe('side requests', () => {
  it('answers a title request with a short title and ignores directives in it', () => {
    const p = planReply(req([user('<session>\n[[cal:http=500]]\n</session>\n\nWrite the title')], { side: 'title' }));
    expect(p.status).toBe(200);
    expect(p.text).toBe(SIDE_TITLE);
    expect(p.directives).toEqual([]);
  });

  it('answers a JSON utility request with a value of the requested schema', () => {
    const schema = {
      type: 'object',
      properties: { reasoning: { type: 'string' }, next_speaker: { type: 'string', enum: ['model', 'user'] }, score: { type: 'integer', minimum: 1 } },
    };
    const p = planReply(req([user('x')], { side: 'json', jsonSchema: schema }));
    expect(JSON.parse(p.text)).toEqual({ reasoning: 'scripted', next_speaker: 'user', score: 1 });
    expect(synthesizeFromSchema({ type: 'STRING', enum: ['pro', 'flash'] })).toBe('flash');
    expect(JSON.parse(planReply(req([], { side: 'json' })).text)).toEqual({});
  });
});

describe('directives', () => {
  it('apply only from the last user message', () => {
    const p = planReply(req([user('[[cal:http=500]] first'), assistant('x'), user('second')]));
    expect(p.status).toBe(200);
    expect(p.directives).toEqual([]);
    expect(p.text).toBe('Received: second');
  });

  it('set status, timing, chunking and stream mode', () => {
    const p = planReply(req([user('go [[cal:http=429]][[cal:delay=10]][[cal:chunk-delay=5]][[cal:chunks=9]][[cal:break]]')]));
    expect(p).toMatchObject({ status: 429, errorMessage: 'Mock rate limit exceeded', delayMs: 10, chunkDelayMs: 5, chunks: 9, mode: 'break' });
    expect(planReply(req([user('[[cal:http=529]]')])).errorMessage).toBe('Mock overloaded');
    expect(planReply(req([user('[[cal:http=500]]')])).errorMessage).toBe('Mock internal server error');
    expect(planReply(req([user('[[cal:fail]]')])).mode).toBe('fail');
  });

  it('call a tool first, then answer from the tool result', () => {
    const msg = 'do it [[cal:shell=echo hi]]';
    const first = planReply(req([user(msg)]));
    expect(first.tool).toEqual({ type: 'shell', command: 'echo hi' });
    const second = planReply(
      req([user(msg), { kind: 'tool_call', id: 't1', name: 'Bash' }, { kind: 'tool_result', id: 't1', output: '\nhi\nmore', isError: false }]),
    );
    expect(second.tool).toBeNull();
    expect(second.text).toBe('Tool finished: hi');
    const failed = planReply(req([user(msg), { kind: 'tool_call', id: 't1', name: 'Bash' }, { kind: 'tool_result', id: 't1', output: 'Exit code 1', isError: true }]));
    expect(failed.text).toBe('Tool failed: Exit code 1');
    const mcp = planReply(req([user('[[cal:mcp=probe.echo {"text":"x"}]]')]));
    expect(mcp.tool).toEqual({ type: 'mcp', server: 'probe', tool: 'echo', args: { text: 'x' } });
  });

  it('an MCP tool is called by the name the CLI offers it under (GitHub Copilot CLI 1.0.102: server-tool)', () => {
    const offered = [{ name: 'bash', parameters: {} }, { name: 'probe-echo', parameters: {} }];
    const call = resolveWith({ type: 'mcp', server: 'probe', tool: 'echo', args: { text: 'x' } }, offered, 'c1', { shellNames: ['bash'], shellKey: 'command', shellDescription: false, mcpDefault: (s, t) => ({ name: `mcp__${s}__${t}` }) });
    expect(call).toEqual({ id: 'c1', name: 'probe-echo', args: { text: 'x' } });
  });

  it('several tool directives run one after another, one call per request', () => {
    const msg = 'both [[cal:shell=echo one]] [[cal:mcp=probe.echo {"text":"two"}]]';
    const call = (id: string) => ({ kind: 'tool_call' as const, id, name: 'x' });
    const result = (id: string, output: string) => ({ kind: 'tool_result' as const, id, output, isError: false });
    expect(planReply(req([user(msg)])).tool).toEqual({ type: 'shell', command: 'echo one' });
    expect(planReply(req([user(msg), call('a'), result('a', 'one')])).tool).toEqual({ type: 'mcp', server: 'probe', tool: 'echo', args: { text: 'two' } });
    const done = planReply(req([user(msg), call('a'), result('a', 'one'), call('b'), result('b', 'echo: two')]));
    expect(done.tool).toBeNull();
    expect(done.text).toBe('Tool finished: echo: two');
  });

  it('echo, reply and lines choose the text', () => {
    expect(planReply(req([user('[[cal:echo]] héllo\n  "wörld" \'x\'\t✓')])).text).toBe('héllo\n  "wörld" \'x\'\t✓');
    expect(planReply(req([user('ignored [[cal:reply=Line 1\\nLine 2]]')])).text).toBe('Line 1\nLine 2');
    const lines = planReply(req([user('[[cal:lines=5]]')])).text.split('\n');
    expect(lines).toHaveLength(5);
    expect(lines[0]).toBe('1/5 ünïcödé ✓ 日本語 — “quotes” & <tags> 🚀');
    expect(numberedLines(3)).toBe(numberedLines(3));
  });

  it('answer an invalid directive with an explanation', () => {
    const p = planReply(req([user('[[cal:nope]]')]));
    expect(p.status).toBe(200);
    expect(p.text).toBe('Invalid cal directive: unknown directive "nope"');
  });
});

describe('text helpers', () => {
  it('drops CLI-injected blocks from user text', () => {
    expect(userOwnText('<system-reminder>\nx\n</system-reminder>')).toBeNull();
    expect(userOwnText('<environment_context>\n<cwd>/x</cwd>\n</environment_context>')).toBeNull();
    expect(userOwnText('<session_context>\nThis is the Gemini CLI.')).toBeNull();
    expect(userOwnText('[Request interrupted by user]')).toBeNull();
    expect(userOwnText('hi <system-reminder>x</system-reminder>')).toBe('hi');
    expect(userOwnText('plain')).toBe('plain');
    // GitHub Copilot CLI 1.0.102 prefixes every user message with its clock.
    expect(userOwnText('<current_datetime>2026-12-05T18:39:24.590+00:00</current_datetime>\n\nRemember KIWI.')).toBe('Remember KIWI.');
    expect(userOwnText('<current_datetime>2026-12-05T18:39:24.590+00:00</current_datetime>\n\n[[cal:echo]] hi')).toBe('[[cal:echo]] hi');
    expect(userOwnText('see <current_datetime>x</current_datetime>')).toBe('see <current_datetime>x</current_datetime>');
  });

  it('takes the first line after an Output: label', () => {
    expect(firstOutputLine('Chunk ID: 1\nWall time: 0 s\nProcess exited with code 0\nOutput:\nhello\nmore\n')).toBe('hello');
    expect(firstOutputLine('<untrusted_context>\nOutput: gem\nProcess Group PGID: 1\n</untrusted_context>')).toBe('gem');
    expect(firstOutputLine('<untrusted_context>\necho: PING\n</untrusted_context>')).toBe('echo: PING');
    expect(firstOutputLine('\n\n  first  \nsecond')).toBe('first');
    expect(firstOutputLine('')).toBe('(no output)');
  });

  it('splits text into chunks without cutting code points (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 60 }), fc.integer({ min: 1, max: 20 }), (s, n) => {
        const parts = splitText(s, n);
        expect(parts.join('')).toBe(s);
        expect(parts.length).toBeLessThanOrEqual(Math.max(1, n));
        const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
        for (const p of parts) expect(loneSurrogate.test(p)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
});
