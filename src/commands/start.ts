import type { ProviderName, Transport } from '../handles/schema.js';
import { AgentSessions } from '../sessions/agent-sessions.js';
import { StateStore } from '../state/store.js';
import { fileText, parseSeconds, passThroughEnv, readMessage, renderError, renderTurn, type GlobalOptions } from './common.js';
import { CalError } from '../errors.js';
import { liveOutput } from './progress.js';

export interface StartOptions {
  provider: ProviderName;
  cwd?: string;
  model?: string;
  transport?: Transport;
  name?: string;
  systemPrompt?: string;
  systemPromptFile?: string;
  mcpConfig?: string;
  cliPath?: string;
  timeout?: string;
  events?: boolean;
  stream?: boolean;
  json?: boolean;
}

export async function runStart(messageArg: string | undefined, opts: StartOptions, global: GlobalOptions): Promise<number> {
  try {
    if (opts.systemPrompt !== undefined && opts.systemPromptFile !== undefined) {
      throw new CalError('usage', '--system-prompt and --system-prompt-file exclude each other');
    }
    const message = await readMessage(messageArg);
    const store = await StateStore.open(global.stateDir);
    const sessions = new AgentSessions(store);
    const live = await liveOutput(opts, 'starting');
    try {
      const { handle, turn } = await sessions.start({
        provider: opts.provider,
        message,
        cwd: opts.cwd,
        model: opts.model,
        transport: opts.transport,
        name: opts.name,
        systemPrompt: opts.systemPromptFile ? await fileText(opts.systemPromptFile, '--system-prompt-file') : opts.systemPrompt,
        mcpConfig: opts.mcpConfig,
        cliPath: opts.cliPath,
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
