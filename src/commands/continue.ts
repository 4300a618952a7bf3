import { CalError } from '../errors.js';
import { AgentSessions } from '../sessions/agent-sessions.js';
import { StateStore, parseHandleRef } from '../state/store.js';
import { fileText, parseSeconds, passThroughEnv, readMessage, renderError, renderTurn, type GlobalOptions } from './common.js';
import { liveOutput } from './progress.js';

export interface ContinueOptions {
  cwd?: string;
  model?: string;
  systemPrompt?: string;
  systemPromptFile?: string;
  mcpConfig?: string;
  wait?: string | boolean;
  timeout?: string;
  events?: boolean;
  stream?: boolean;
  json?: boolean;
}

export async function runContinue(ref: string, messageArg: string | undefined, opts: ContinueOptions, global: GlobalOptions): Promise<number> {
  try {
    parseHandleRef(ref);
    if (opts.systemPrompt !== undefined && opts.systemPromptFile !== undefined) {
      throw new CalError('usage', '--system-prompt and --system-prompt-file exclude each other');
    }
    const message = await readMessage(messageArg);
    const waitSeconds = opts.wait === undefined ? undefined : opts.wait === true || opts.wait === 'forever' ? Infinity : parseSeconds(String(opts.wait), '--wait');
    const store = await StateStore.open(global.stateDir);
    const sessions = new AgentSessions(store);
    const live = await liveOutput(opts, 'sending');
    try {
      const { handle, turn } = await sessions.continue({
        ref,
        message,
        cwd: opts.cwd,
        model: opts.model,
        systemPrompt: opts.systemPromptFile ? await fileText(opts.systemPromptFile, '--system-prompt-file') : opts.systemPrompt,
        mcpConfig: opts.mcpConfig,
        waitSeconds,
        timeoutSeconds: opts.timeout ? parseSeconds(opts.timeout, '--timeout') : undefined,
        env: passThroughEnv(),
        onEvent: live.onEvent,
        onProgress: live.onProgress,
      });
      return renderTurn(handle, live.done(turn), opts);
    } finally {
      live.stop();
    }
  } catch (err) {
    return renderError(err, opts);
  }
}
