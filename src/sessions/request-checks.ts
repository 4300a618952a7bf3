import type { CliAdapter } from '../adapters/types.js';
import { resolveAcpCommand } from '../adapters/acp-command.js';
import type { PinnedCli } from '../handles/schema.js';
import { CalError } from '../errors.js';
import { ToolPolicy, toolPolicies, Transport, type AgentSessionHandle } from '../handles/schema.js';

/** Checks of a start or continue request made before anything is recorded (agent-sessions.ts). */

/**
 * A continue that expects another transport than the handle's is refused before anything is
 * recorded or sent. Crossing over is not offered although a CLI's native session is the same
 * underneath: a pane, while it is open, holds the conversation in memory, so a structured turn
 * beside it would write turns the pane never sees, and its next paste would continue from the
 * stale history (a fork that looks like a continuation); an API session is cal's own history,
 * which no CLI has, and a CLI session has none of cal's.
 */
export function refuseOtherTransport(handle: AgentSessionHandle, expected: string | undefined): void {
  if (expected === undefined) return;
  const requested = Transport.safeParse(expected);
  if (!requested.success) throw new CalError('usage', `unknown transport ${JSON.stringify(expected)}; known: ${Transport.options.join(', ')}`);
  const actual = handle.provider.transport;
  if (requested.data === actual) return;
  const why =
    actual === 'api'
      ? `an API session is continued from cal's own stored history, and has no CLI to run`
      : requested.data === 'api'
        ? `a CLI session is continued by its CLI's own resume; cal keeps no history of it to send to an API`
        : `a handle keeps the transport it was started with: while a pane is open it holds the conversation in memory, and a turn through the other transport beside it would fork the session (the native id is provider.nativeSessionId in cal inspect ${handle.id} --json, to move it by hand)`;
  throw new CalError('non_applicable', `handle ${handle.id} runs on the ${actual} transport, not ${requested.data}: ${why}`, {
    handle: handle.id,
    field: 'transport',
    // As for stale_handle: expected is what the handle holds, actual what the call asked for.
    expected: actual,
    actual: requested.data,
  });
}

/** The session's tool policy, refused (usage) before anything is saved when its CLI has no equivalent. */
export function checkToolPolicy(requested: string | undefined, adapter: CliAdapter | null, provider: string): ToolPolicy {
  const parsed = ToolPolicy.safeParse(requested ?? 'default');
  if (!parsed.success) throw new CalError('usage', `unknown --tool-policy ${JSON.stringify(requested)}; known: ${toolPolicies.join(', ')}`);
  const supported: readonly ToolPolicy[] = adapter?.toolPolicies ?? ['default'];
  if (!supported.includes(parsed.data)) {
    throw new CalError('usage', `${provider} has no equivalent of --tool-policy ${parsed.data}${adapter ? '' : ' (an API session runs no tools)'}; it takes: ${supported.join(', ')}`);
  }
  return parsed.data;
}

export function nameTaken(name: string): CalError {
  return new CalError('usage', `a handle named ${name} already exists; pick another --name, pass --replace, or cal remove ${name}`);
}

/**
 * The CLI a new session pins: `--cli-path` or PATH, or for `--provider acp` (and only there) the
 * agent's `--acp-command`.
 */
export async function resolveSessionCli(adapter: CliAdapter, req: { provider: string; cliPath?: string; acpCommand?: string; env: Record<string, string> }): Promise<PinnedCli> {
  if (adapter.name !== 'acp') {
    if (req.acpCommand !== undefined) throw new CalError('usage', `--acp-command is for --provider acp; ${req.provider} is launched by its own adapter (--transport acp runs it over ACP)`);
    return adapter.resolveCli(req.cliPath, req.env);
  }
  if (req.cliPath !== undefined) throw new CalError('usage', '--provider acp takes its executable from --acp-command, not --cli-path');
  if (req.acpCommand === undefined) return adapter.resolveCli(undefined, req.env);
  return resolveAcpCommand(req.acpCommand, req.env);
}
