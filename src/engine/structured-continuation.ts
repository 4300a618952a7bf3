import { CalError } from '../errors.js';
import type { PinnedCli, ProviderHandle } from '../handles/schema.js';
import type { CliAdapter, SessionConfig } from '../adapters/types.js';
import { checkPinned } from '../adapters/resolve.js';
import type { EngineOptions, TurnOutcome } from './provider-continuation.js';

/**
 * Structured transport (design §4.6): one CLI process per turn in its JSON mode, with the CLI's
 * own resume after the first turn. No pane; the answer comes from the CLI's event stream.
 */
export async function runStructuredTurn(
  adapter: CliAdapter,
  handle: ProviderHandle,
  config: SessionConfig,
  message: string,
  opts: EngineOptions,
): Promise<{ handle: ProviderHandle; outcome: TurnOutcome }> {
  if (!adapter.structured) throw new CalError('usage', `${adapter.name} has no structured transport`);
  const cli = handle.cli as PinnedCli;
  const mode = handle.nativeSessionId ? 'resume' : 'fresh';
  if (mode === 'resume') {
    await checkPinned(cli, opts.env, adapter.executable);
    await opts.hooks.emit('resuming', { nativeSessionId: handle.nativeSessionId });
  }
  await adapter.prepare(opts.env, config);
  await opts.hooks.onSending();
  const result = await adapter.structured.run({
    cli,
    env: opts.env,
    config,
    mode,
    // fresh: the id chosen up front (a CLI that lets cal choose it uses it), resume: the native one.
    sessionId: mode === 'resume' ? handle.nativeSessionId : handle.pendingSessionId,
    message,
    timeoutMs: opts.timeoutMs,
    onProgress: opts.hooks.onProgress,
  });
  handle = {
    ...handle,
    nativeSessionId: result.sessionId,
    pendingSessionId: null,
    transcript: result.transcriptPath ? { path: result.transcriptPath, offset: handle.transcript?.offset ?? 0 } : handle.transcript,
    status: 'idle',
  };
  await opts.hooks.onHandleChanged(handle, {});
  await opts.hooks.onRecorded(null);
  await opts.hooks.emit('running', {});
  return { handle, outcome: { status: result.status, answer: result.answer, error: result.error, turnKey: null, tools: result.tools } };
}
