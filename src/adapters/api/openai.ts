import { z } from '../../util/zod.js';
import { CalError } from '../../errors.js';
import { postJson } from './http.js';
import type { ApiProviderAdapter, ApiRequest, ApiReply } from './types.js';

const ChatResponse = z.object({ choices: z.array(z.object({ message: z.object({ content: z.string().nullable() }).passthrough() }).passthrough()) }).passthrough();

/** OpenAI Chat Completions (OPENAI_BASE_URL, OPENAI_API_KEY). */
export const openaiApi: ApiProviderAdapter = {
  name: 'openai',
  defaultModel: 'gpt-4.1',
  envNames: ['OPENAI_BASE_URL', 'OPENAI_API_KEY'],

  checkEnv(env) {
    if (!env.OPENAI_API_KEY) throw new CalError('usage', 'the openai provider needs OPENAI_API_KEY in the environment');
  },

  async send(req: ApiRequest): Promise<ApiReply> {
    const base = (req.env.OPENAI_BASE_URL || 'https://api.openai.com/v1').replace(/\/+$/, '');
    const messages = [...(req.system ? [{ role: 'system', content: req.system }] : []), ...req.messages];
    return postJson(`${base}/chat/completions`, { authorization: `Bearer ${req.env.OPENAI_API_KEY}` }, { model: req.model, messages }, req.timeoutMs, (json) => {
      const parsed = ChatResponse.safeParse(json);
      return parsed.success ? (parsed.data.choices[0]?.message.content ?? null) : null;
    }, req.signal);
  },
};
