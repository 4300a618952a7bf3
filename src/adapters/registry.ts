import { CalError } from '../errors.js';
import type { ProviderName } from '../handles/schema.js';
import type { ApiProviderAdapter } from './api/types.js';
import type { CliAdapter } from './types.js';

/**
 * Name → how its adapter is loaded. Adding a CLI touches its own folder and one line here. Each
 * adapter is imported on first use: a continue of one CLI's session never builds the modules and
 * schemas of the others (cal's own start-up time, issue 17).
 */
const cliAdapters: Partial<Record<ProviderName, () => Promise<CliAdapter>>> = {
  'claude-code': async () => (await import('./claude-code/index.js')).claudeCodeAdapter,
  codex: async () => (await import('./codex/index.js')).codexAdapter,
  gemini: async () => (await import('./gemini/index.js')).geminiAdapter,
  pi: async () => (await import('./pi/index.js')).piAdapter,
  cursor: async () => (await import('./cursor/index.js')).cursorAdapter,
  agy: async () => (await import('./agy/index.js')).agyAdapter,
  qwen: async () => (await import('./qwen/index.js')).qwenAdapter,
  copilot: async () => (await import('./copilot/index.js')).copilotAdapter,
  opencode: async () => (await import('./opencode/index.js')).opencodeAdapter,
  cline: async () => (await import('./cline/index.js')).clineAdapter,
  kilo: async () => (await import('./kilo/index.js')).kiloAdapter,
  acp: async () => (await import('./acp/agent.js')).acpAgentAdapter,
};

const apiAdapters: Partial<Record<ProviderName, () => Promise<ApiProviderAdapter>>> = {
  anthropic: async () => (await import('./api/anthropic.js')).anthropicApi,
  openai: async () => (await import('./api/openai.js')).openaiApi,
};

/** One import per adapter per process, however many callers ask at once. */
const loaded = new Map<ProviderName, Promise<CliAdapter | ApiProviderAdapter>>();

function memoised<T extends CliAdapter | ApiProviderAdapter>(name: ProviderName, load: () => Promise<T>): Promise<T> {
  let pending = loaded.get(name);
  if (!pending) {
    pending = load();
    loaded.set(name, pending);
  }
  return pending as Promise<T>;
}

/** The adapter of a CLI provider; usage error for a provider with no CLI adapter in this cal. */
export async function loadCliAdapter(name: ProviderName): Promise<CliAdapter> {
  const load = cliAdapters[name];
  if (!load) throw new CalError('usage', `provider ${name} has no adapter in this version of cal; available: ${Object.keys(cliAdapters).join(', ')}`);
  return memoised(name, load);
}

/** Every CLI adapter, in registry order (certify and the tests; never on a turn's path). */
export async function loadRegisteredAdapters(): Promise<CliAdapter[]> {
  return Promise.all((Object.keys(cliAdapters) as ProviderName[]).map((name) => loadCliAdapter(name)));
}

/** Whether a provider is an API-only one (known without loading anything). */
export function isApiProvider(name: ProviderName): boolean {
  return apiAdapters[name] !== undefined;
}

/** The API adapter for an API-only provider, or null for a CLI provider. */
export async function loadApiAdapter(name: ProviderName): Promise<ApiProviderAdapter | null> {
  const load = apiAdapters[name];
  return load ? memoised(name, load) : null;
}
