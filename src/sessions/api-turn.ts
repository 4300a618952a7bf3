import { loadApiAdapter } from '../adapters/registry.js';
import type { EngineHooks, TurnOutcome } from '../engine/types.js';
import { CalError } from '../errors.js';
import type { AgentSessionHandle } from '../handles/schema.js';
import { readHistory, writeHistory } from './api-history.js';

/**
 * Agent-level continuation of an API session: the stored history plus the new message goes to
 * the vendor API; the history grows only by a completed exchange.
 */
export async function apiTurn(
  handle: AgentSessionHandle,
  message: string,
  env: Record<string, string>,
  timeoutMs: number,
  hooks: EngineHooks,
  signal?: AbortSignal,
): Promise<TurnOutcome> {
  const api = await loadApiAdapter(handle.provider.provider);
  if (!api || !handle.provider.transcript) throw new CalError('invalid_handle', `handle ${handle.id} is an API session without an API provider or history`);
  api.checkEnv(env);
  const file = handle.provider.transcript.path;
  const history = await readHistory(file);
  await hooks.onSending();
  // The key is the index the user message takes in the history: recover uses it to tell a
  // finished exchange from one that never reached the API.
  await hooks.onRecorded(`m${history.length}`);
  await hooks.emit('running', {});
  const reply = await api.send({
    model: handle.config.model ?? api.defaultModel,
    system: handle.config.systemPrompt,
    messages: [...history, { role: 'user', content: message }],
    env,
    timeoutMs,
    ...(signal ? { signal } : {}),
  });
  if (!reply.ok) {
    if (signal?.aborted) return { status: 'interrupted', answer: null, error: reply.message, turnKey: null, tools: [] };
    return { status: 'failed', answer: null, error: reply.message, turnKey: null, tools: [] };
  }
  const messages = [...history, { role: 'user' as const, content: message }, { role: 'assistant' as const, content: reply.text }];
  await writeHistory(file, messages);
  await hooks.onHandleChanged({ ...handle.provider, status: 'idle', transcript: { path: file, offset: messages.length } }, {});
  return { status: 'completed', answer: reply.text, error: null, turnKey: `m${history.length}`, tools: [] };
}
