import { CalError } from '../errors.js';
import type { ProviderName } from '../handles/schema.js';
import { claudeCodeAdapter } from './claude-code/index.js';
import { codexAdapter } from './codex/index.js';
import { cursorAdapter } from './cursor/index.js';
import { agyAdapter } from './agy/index.js';
import { geminiAdapter } from './gemini/index.js';
import { piAdapter } from './pi/index.js';
import type { CliAdapter } from './types.js';
import { anthropicApi } from './api/anthropic.js';
import { openaiApi } from './api/openai.js';
import type { ApiProviderAdapter } from './api/types.js';

/** Name → adapter. Adding a CLI touches its own folder and one line here. */
const adapters: Partial<Record<ProviderName, CliAdapter>> = {
  'claude-code': claudeCodeAdapter,
  codex: codexAdapter,
  gemini: geminiAdapter,
  pi: piAdapter,
  cursor: cursorAdapter,
  agy: agyAdapter,
};

export function cliAdapter(name: ProviderName): CliAdapter {
  const adapter = adapters[name];
  if (!adapter) throw new CalError('usage', `provider ${name} has no adapter in this version of cal; available: ${Object.keys(adapters).join(', ')}`);
  return adapter;
}

export function registeredAdapters(): CliAdapter[] {
  return Object.values(adapters);
}

const apiAdapters: Partial<Record<ProviderName, ApiProviderAdapter>> = {
  anthropic: anthropicApi,
  openai: openaiApi,
};

/** The API adapter for an API-only provider, or null for a CLI provider. */
export function apiAdapter(name: ProviderName): ApiProviderAdapter | null {
  return apiAdapters[name] ?? null;
}
