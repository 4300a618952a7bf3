import { CalError } from '../errors.js';
import type { ProviderHandle } from '../handles/schema.js';
import type { CliAdapter, SessionConfig } from '../adapters/types.js';
import { continueTmuxSession, startTmuxSession, type EngineOptions, type TurnOutcome } from './provider-continuation.js';
import { runStructuredTurn } from './structured-continuation.js';

/**
 * The provider-level continuation decision (design §4). API-only providers have no provider-level
 * continuation: the agent-session layer continues them from its own stored history.
 */
export async function continueProvider(
  adapter: CliAdapter,
  handle: ProviderHandle,
  config: SessionConfig,
  message: string,
  opts: EngineOptions,
): Promise<{ handle: ProviderHandle; outcome: TurnOutcome }> {
  switch (handle.transport) {
    case 'api':
      throw new CalError('non_applicable', `${handle.provider} is an API provider: it has no native continuation; continue it with cal continue (agent level)`);
    case 'structured':
      return runStructuredTurn(adapter, handle, config, message, opts);
    case 'tmux':
      return continueTmuxSession(adapter, handle, config, message, opts);
  }
}

export async function startProvider(
  adapter: CliAdapter,
  handle: ProviderHandle,
  config: SessionConfig,
  message: string,
  opts: EngineOptions,
): Promise<{ handle: ProviderHandle; outcome: TurnOutcome }> {
  switch (handle.transport) {
    case 'api':
      throw new CalError('non_applicable', `${handle.provider} is an API provider: it has no native session to start`);
    case 'structured':
      return runStructuredTurn(adapter, handle, config, message, opts);
    case 'tmux':
      return startTmuxSession(adapter, handle, config, message, opts);
  }
}
