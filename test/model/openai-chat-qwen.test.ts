/**
 * The scripted model's Chat Completions dialect on the requests Qwen Code 0.24.4 sends (shapes
 * measured from the real binary, docs/qwen.md): one user message of several text parts, the
 * `<system-reminder>` blocks first and the prompt last; and, after every turn, a memory-extraction
 * request (and, in the TUI, a next-prompt suggestion) that is not the user's turn.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { postJson } from './helpers.js';

const reminder = (body: string) => ({ type: 'text', text: `<system-reminder>\n${body}\n</system-reminder>` });

function qwenUser(prompt: string) {
  return {
    role: 'user',
    content: [reminder('The following skills are available for use with the Skill tool.'), reminder('This is the Qwen Code. We are setting up the context for our chat.'), reminder('The current date is: Saturday, December 5, 2026.'), { type: 'text', text: prompt }],
  };
}

const tools = [{ type: 'function', function: { name: 'run_shell_command', parameters: { type: 'object', properties: { command: { type: 'string' } } } } }];

describe('openai-chat: Qwen Code requests', () => {
  let server: ModelServer;
  beforeEach(async () => {
    server = await startModelServer();
  });
  afterEach(async () => {
    await server.close();
  });

  it('takes the last text part after the reminders as the prompt and recalls across turns', async () => {
    const first = await postJson(`${server.url}/v1/chat/completions`, { model: 'scripted-model', messages: [{ role: 'system', content: 'You are Qwen Code' }, qwenUser('Remember the codeword KIWI.')], tools });
    expect(first.status).toBe(200);
    expect(JSON.parse(first.text).choices[0].message.content).toBe('OK, I will remember the codeword KIWI.');
    const second = await postJson(`${server.url}/v1/chat/completions`, {
      model: 'scripted-model',
      messages: [qwenUser('Remember the codeword KIWI.'), { role: 'assistant', content: 'OK, I will remember the codeword KIWI.' }, qwenUser('What was the codeword?')],
      tools,
    });
    expect(JSON.parse(second.text).choices[0].message.content).toBe('The codeword was KIWI.');
    expect(server.turnRequests().map((r) => r.lastUserMessage)).toEqual(['Remember the codeword KIWI.', 'What was the codeword?']);
  });

  it('answers the memory extraction and the prompt suggestion as side requests, never as a user turn', async () => {
    const history = [qwenUser('Remember the codeword KIWI.'), { role: 'assistant', content: 'OK, I will remember the codeword KIWI.' }];
    const memory = await postJson(`${server.url}/v1/chat/completions`, {
      model: 'scripted-model',
      messages: [...history, { role: 'user', content: [{ type: 'text', text: 'Managed memory has TWO directories. Choose which one to write each memory into …' }] }],
      tools,
    });
    expect(memory.status).toBe(200);
    const reply = JSON.parse(memory.text).choices[0].message;
    // Harmless: plain text, no tool call that would write memory files.
    expect(reply.tool_calls).toBeUndefined();
    expect(typeof reply.content).toBe('string');
    const suggestion = await postJson(`${server.url}/v1/chat/completions`, {
      model: 'scripted-model',
      messages: [...history, { role: 'user', content: '[SUGGESTION MODE: Suggest what the user might naturally type next.]' }],
    });
    expect(suggestion.status).toBe(200);
    expect(server.requests().map((r) => r.side)).toEqual([true, true]);
    expect(server.turnRequests()).toEqual([]);
  });
});
