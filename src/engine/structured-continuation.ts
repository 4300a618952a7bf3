import { CalError } from '../errors.js';
import type { PinnedCli } from '../handles/schema.js';
import { checkPinned } from '../adapters/resolve.js';
import type { EngineResult, TurnRequest } from './types.js';

/**
 * Structured transport (design §4.6): one CLI process per turn in its JSON mode, with the CLI's
 * own resume after the first turn. No pane; the answer comes from the CLI's event stream.
 */
export async function runStructuredTurn(req: TurnRequest, text: string): Promise<EngineResult> {
  const { adapter, hooks } = req;
  let handle = req.handle;
  if (!adapter.structured) throw new CalError('usage', `${adapter.name} has no structured transport`);
  let cli = handle.cli as PinnedCli;
  const mode = handle.nativeSessionId ? 'resume' : 'fresh';
  if (mode === 'resume') {
    cli = await checkPinned(cli, req.env, adapter.executable);
    await hooks.emit('resuming', { nativeSessionId: handle.nativeSessionId });
  }
  await adapter.prepare(req.env, req.config);
  await hooks.onSending();
  const result = await adapter.structured.run({
    cli,
    env: req.env,
    config: req.config,
    mode,
    // The first turn may use the id chosen up front, where the CLI lets cal choose one.
    sessionId: mode === 'resume' ? handle.nativeSessionId : handle.pendingSessionId,
    message: text,
    timeoutMs: req.timeoutMs,
    ...(req.sessionDir ? { sessionDir: req.sessionDir } : {}),
    ...(req.signal ? { signal: req.signal } : {}),
    ...(hooks.onProgress ? { onProgress: hooks.onProgress } : {}),
  });
  handle = {
    ...handle,
    cli,
    nativeSessionId: result.sessionId,
    pendingSessionId: null,
    transcript: result.transcriptPath ? { path: result.transcriptPath, offset: handle.transcript?.offset ?? 0 } : handle.transcript,
    status: 'idle',
  };
  await hooks.onHandleChanged(handle, {});
  await hooks.onRecorded(null);
  await hooks.emit('running', {});
  return { handle, outcome: { status: result.status, answer: result.answer, error: result.error, turnKey: null, tools: result.tools } };
}
