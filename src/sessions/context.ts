import type { CliAdapter, SessionConfig } from '../adapters/types.js';
import type { TmuxFactory } from '../engine/tmux-control.js';
import type { AgentSessionHandle, ProviderName } from '../handles/schema.js';
import type { EventRecord, StateStore } from '../state/store.js';
import type { TurnOutcome } from '../engine/types.js';

/** What the agent-session modules share: the state store, how tmux is reached, the event log. */
export interface SessionContext {
  store: StateStore;
  tmux: TmuxFactory;
  /** The adapter of a CLI provider (the registry's, loaded on first use; a fake in unit tests). */
  adapter(name: ProviderName): Promise<CliAdapter>;
  event(handle: string, event: string, turn?: string, detail?: Record<string, unknown>, sink?: (e: EventRecord) => void): Promise<void>;
}

export function sessionContext(store: StateStore, tmux: TmuxFactory, adapter: (name: ProviderName) => CliAdapter | Promise<CliAdapter>): SessionContext {
  return {
    store,
    tmux,
    adapter: async (name) => adapter(name),
    async event(handle, event, turn, detail, sink) {
      const record: EventRecord = { time: new Date().toISOString(), handle, event, ...(turn ? { turn } : {}), ...(detail ? { detail } : {}) };
      await store.appendEvent(record);
      sink?.(record);
    },
  };
}

/** What the adapter needs of the session's recorded configuration. */
export function sessionConfig(handle: AgentSessionHandle): SessionConfig {
  return {
    cwd: handle.config.workingDir.realPath,
    model: handle.config.model,
    systemPrompt: handle.config.systemPrompt,
    mcpConfigPath: handle.config.mcpConfigPath,
    toolPolicy: handle.config.toolPolicy,
    trustWorkingDir: handle.config.trustWorkingDir,
  };
}

export function errorKindFor(status: TurnOutcome['status']): string {
  return status === 'failed' ? 'turn_failed' : status;
}

export function handleLockName(handleId: string): string {
  return `handle-${handleId}`;
}
