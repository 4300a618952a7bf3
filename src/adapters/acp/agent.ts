import { CalError } from '../../errors.js';
import type { PinnedCli } from '../../handles/schema.js';
import { resolveAcpCommand } from '../acp-command.js';
import type { CliAdapter, TurnObserver } from '../types.js';
import { acpMessageGuard } from '../acp-transport.js';

/**
 * `--provider acp`: any agent that speaks the Agent Client Protocol, by the command line the
 * session started with (`--acp-command`, on the handle as `cli.realPath` and `cli.args`). Its
 * only transport is ACP: cal knows nothing of its store, its terminal or its flags, so there is
 * no pane, no transcript and no model or system-prompt flag; the tool policy is kept by cal's
 * answers to the agent's permission requests (adapters/acp/policy.ts).
 */
class NoTranscript implements TurnObserver {
  readonly observation = { phase: 'waiting' } as const;
  readonly tools = [];
  readonly partialAnswer = '';
  readonly unknownRecords = 0;
  feed(): void {}
}

export const acpAgentAdapter: CliAdapter = {
  name: 'acp',
  executable: 'acp-agent',
  capabilities: {
    tmuxContinuation: false,
    nativeResumeInTmux: false,
    structuredTransport: false,
    apiOnly: false,
    needsStableWorkingDir: true,
  },
  toolPolicies: ['default', 'read-only', 'accept-edits', 'bypass'],
  envNames: [],
  // cal knows nothing of an agent behind --acp-command, so it adds nothing for trust either: the
  // agent's own policy holds, as when the user runs it from their editor.
  folderTrust: { kind: 'none', why: 'an ACP agent cal has no adapter for: cal adds no trust of its own, the agent decides as it would for any ACP client' },

  resolveCli(_cliPath: string | undefined, _env: Record<string, string>): Promise<PinnedCli> {
    throw new CalError('usage', '--provider acp needs --acp-command "<the agent\'s command line>" (for example "gemini --acp")');
  },

  async prepare(_env, config) {
    if (config.systemPrompt !== null) throw new CalError('usage', '--provider acp: ACP has no system prompt of its own; give it to the agent in its own configuration');
    // Checks only: nothing is written that the agent reads at its start.
    return false;
  },

  launch() {
    throw new CalError('non_applicable', '--provider acp runs over ACP only: it has no pane');
  },

  bindTranscript: async () => null,
  observeTurn: () => new NoTranscript(),

  acp: {
    command: (req) => ({ argv: [req.cli.realPath, ...(req.cli.args ?? [])], env: req.env }),
    messageGuard: acpMessageGuard,
  },

  async scriptedModelEnv(_dir, _modelUrl, env) {
    return env;
  },
  liveCertificationOnly: 'cal knows no ACP agent behind --provider acp ahead of time: certify it with the CLI it runs (cal certify --provider <cli> --transport acp), or live',
};

export { resolveAcpCommand };
