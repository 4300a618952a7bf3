import { z } from '../../util/zod.js';
import { CalError } from '../../errors.js';
import { postJson } from './http.js';
import type { ApiProviderAdapter, ApiRequest, ApiReply } from './types.js';

const MessagesResponse = z.object({ content: z.array(z.object({ type: z.string(), text: z.string().optional() }).passthrough()) }).passthrough();

/** Anthropic Messages API (ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN). */
export const anthropicApi: ApiProviderAdapter = {
  name: 'anthropic',
  defaultModel: 'claude-sonnet-4-5',
  envNames: ['ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN'],

  checkEnv(env) {
    if (!env.ANTHROPIC_API_KEY && !env.ANTHROPIC_AUTH_TOKEN) {
      throw new CalError('usage', 'the anthropic provider needs ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN in the environment');
    }
  },

  async send(req: ApiRequest): Promise<ApiReply> {
    const base = (req.env.ANTHROPIC_BASE_URL || 'https://api.anthropic.com').replace(/\/+$/, '');
    const headers: Record<string, string> = { 'anthropic-version': '2023-06-01' };
    if (req.env.ANTHROPIC_API_KEY) headers['x-api-key'] = req.env.ANTHROPIC_API_KEY;
    else if (req.env.ANTHROPIC_AUTH_TOKEN) headers.authorization = `Bearer ${req.env.ANTHROPIC_AUTH_TOKEN}`;
    const body = {
      model: req.model,
      max_tokens: 4096,
      ...(req.system ? { system: req.system } : {}),
      messages: req.messages.map((m) => ({ role: m.role, content: m.content })),
    };
    return postJson(`${base}/v1/messages`, headers, body, req.timeoutMs, (json) => {
      const parsed = MessagesResponse.safeParse(json);
      if (!parsed.success) return null;
      const text = parsed.data.content.filter((b) => b.type === 'text').map((b) => b.text ?? '').join('');
      return text || null;
    }, req.signal);
  },
};
