#!/usr/bin/env node
// A minimal ACP agent (JSON-RPC 2.0, one object a line) for tests of cal's ACP client without a
// real CLI: `node acp-agent.mjs [--no-load]`. It answers `session/new` and `session/load`
// (replaying each earlier prompt and answer as updates, as ACP v1 says, when loads are offered),
// and a prompt with one chunk: "echo: <text>". A prompt holding PERMIT asks a permission for an
// `execute` tool call first and answers with the outcome; one holding HANG waits for
// `session/cancel` and ends `cancelled`. Sessions live in $ACP_AGENT_STORE (a JSON file).
import { readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const loadSession = !process.argv.includes('--no-load');
const store = process.env.ACP_AGENT_STORE;
const sessions = (() => {
  try {
    return JSON.parse(readFileSync(store, 'utf8'));
  } catch {
    return {};
  }
})();
const save = () => writeFileSync(store, JSON.stringify(sessions));
const send = (msg) => process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...msg })}\n`);
const update = (sessionId, u) => send({ method: 'session/update', params: { sessionId, update: u } });
const chunk = (kind, text) => ({ sessionUpdate: kind, content: { type: 'text', text } });
let nextId = 1000;
const waiting = new Map();
let hung = null;

createInterface({ input: process.stdin }).on('line', async (line) => {
  const msg = JSON.parse(line);
  if (msg.method === undefined) {
    waiting.get(msg.id)?.(msg.result);
    return;
  }
  const { id, method, params } = msg;
  if (method === 'initialize') return send({ id, result: { protocolVersion: 1, agentCapabilities: { loadSession }, agentInfo: { name: 'test-agent', version: '1.0.0' } } });
  if (method === 'session/new') {
    const sessionId = `s${Object.keys(sessions).length + 1}`;
    sessions[sessionId] = [];
    save();
    return send({ id, result: { sessionId } });
  }
  if (method === 'session/load') {
    const turns = sessions[params.sessionId];
    if (!turns) return send({ id, error: { code: -32002, message: 'Resource not found', data: { details: `no session ${params.sessionId}` } } });
    for (const [q, a] of turns) {
      update(params.sessionId, chunk('user_message_chunk', q));
      update(params.sessionId, chunk('agent_message_chunk', a));
    }
    return send({ id, result: {} });
  }
  if (method === 'session/cancel') {
    hung?.();
    return;
  }
  if (method === 'session/prompt') {
    const text = params.prompt.map((b) => b.text ?? '').join('');
    let answer = `echo: ${text}`;
    if (text.includes('PERMIT')) {
      const ask = nextId++;
      update(params.sessionId, { sessionUpdate: 'tool_call', toolCallId: 't1', title: 'rm -rf build', kind: 'execute', status: 'pending', rawInput: { command: 'rm -rf build' } });
      send({ id: ask, method: 'session/request_permission', params: { sessionId: params.sessionId, toolCall: { toolCallId: 't1', title: 'rm -rf build', kind: 'execute' }, options: [{ optionId: 'yes', name: 'Allow', kind: 'allow_once' }, { optionId: 'no', name: 'Reject', kind: 'reject_once' }] } });
      const result = await new Promise((r) => waiting.set(ask, r));
      const outcome = result.outcome.outcome === 'selected' ? result.outcome.optionId : 'cancelled';
      update(params.sessionId, { sessionUpdate: 'tool_call_update', toolCallId: 't1', status: outcome === 'yes' ? 'completed' : 'failed', content: [{ type: 'content', content: { type: 'text', text: `permission: ${outcome}` } }] });
      answer = `permission: ${outcome}`;
    }
    if (text.includes('HANG')) {
      update(params.sessionId, chunk('agent_message_chunk', 'working'));
      await new Promise((r) => (hung = r));
      sessions[params.sessionId].push([text, 'session/cancel']);
      save();
      return send({ id, result: { stopReason: 'cancelled' } });
    }
    update(params.sessionId, chunk('agent_message_chunk', answer));
    sessions[params.sessionId].push([text, answer]);
    save();
    return send({ id, result: { stopReason: 'end_turn' } });
  }
  if (id !== undefined) send({ id, error: { code: -32601, message: `Method not found: ${method}` } });
});
