import { CalError } from '../errors.js';
import { slashCommandGuard } from './message-guard.js';
import type { CliAdapter, StructuredTransport } from './types.js';

/**
 * The structured transport of a handle on `--transport acp`: cal's one ACP client
 * (adapters/acp/client.ts, loaded with the first turn) driving the agent the adapter launches.
 */
export function acpTransportOf(adapter: CliAdapter): StructuredTransport {
  const launch = adapter.acp;
  if (!launch) throw new CalError('usage', `${adapter.name} has no ACP mode in cal; use --transport ${adapter.structured ? 'structured' : 'tmux'}`);
  const name = adapter.name === 'acp' ? 'the ACP agent' : `${adapter.name} (ACP)`;
  return { run: async (req) => (await import('./acp/client.js')).runAcpTurn(req, launch, name), messageGuard: launch.messageGuard };
}

/**
 * How ACP agents read a prompt's first character: ACP v1 carries an agent's commands as prompt
 * text starting with '/' (the names it advertises in `available_commands_update`), so a '/' is
 * kept text with a zero-width space for every agent, known or not. Read in their bundles: Gemini
 * CLI 0.61.0 runs a trimmed prompt starting with '/' or '$' as one of its commands (/memory,
 * /init, /restore, /extensions…); Qwen Code 0.24.4 one starting with '/' (not '//' or '/*').
 */
export const acpMessageGuard = slashCommandGuard('an ACP agent runs a prompt that starts with "/" as one of its commands (Gemini CLI 0.61.0: /init, /memory, /restore)', {
  $: { means: 'Gemini CLI 0.61.0 runs a prompt that starts with "$" as a command too', readAt: 'visible', action: 'zero-width-space' },
});
