import { existsSync } from 'node:fs';
import { CalError } from '../../errors.js';
import type { PinnedCli } from '../../handles/schema.js';
import { findExecutable, readVersion } from '../resolve.js';
import { noScriptedModel, structuredOnlyTmuxParts } from '../structured-only.js';
import type { CliAdapter, SessionConfig } from '../types.js';
import { probeCursor } from './binary.js';
import { runCursorTurn, cursorToolPolicies } from './turn.js';
import { TEXT_ONLY_GUARD } from '../message-guard.js';

/**
 * Cursor CLI (`cursor-agent`, also installed as `agent`; research §D, from Cursor's documentation
 * and third parties who ran it; nothing here was run against the real binary).
 *
 * Structured only. Cursor's one readable transcript, `agent-transcripts/<id>/<id>.jsonl`, has no
 * stable message ids, can be rewritten and carries no end-of-turn record, so a pasted turn's end
 * could not be proved without the pane: there is no tmux transport. Each turn is one
 * `cursor-agent -p --output-format stream-json … --resume <chat id>` process (see turn.ts), the chat
 * id minted by `create-chat` before the first turn. Cursor keys chats by working directory, so a
 * session is only ever resumed in its own. Nothing is written into the user's Cursor config:
 * workspace trust is `--trust` on every launch, MCP servers come through `--plugin-dir`.
 *
 * Cursor cannot be pointed at a local model (`--endpoint` speaks Cursor's own protocol), so cal
 * certifies it only in a user's live run.
 */
export const cursorAdapter: CliAdapter = {
  name: 'cursor',
  executable: 'cursor-agent',
  capabilities: {
    tmuxContinuation: false,
    nativeResumeInTmux: false,
    structuredTransport: true,
    apiOnly: false,
    needsStableWorkingDir: true,
  },
  toolPolicies: cursorToolPolicies,
  envNames: ['HOME', 'CURSOR_API_KEY', 'CURSOR_CONFIG_DIR', 'XDG_CONFIG_HOME'],
  liveCertificationOnly: "Cursor CLI cannot be pointed at a local model (its --endpoint speaks Cursor's own API), so only a run with the real cursor-agent and a Cursor login can prove it",

  async resolveCli(cliPath: string | undefined, env: Record<string, string>): Promise<PinnedCli> {
    const found = findExecutable('cursor-agent', cliPath, env);
    const pinned = { ...found, version: await readVersion(found.realPath, env) };
    // A release without the flags cal drives it by is refused before any handle exists.
    await probeCursor(pinned, env);
    return pinned;
  },

  // cursor-agent refuses an untrusted folder itself ("Workspace Trust Required", in print mode
  // too); cal's trust is `--trust` on each run (turn.ts), and its refusal without it is reported
  // as untrusted_folder (binary.ts): nothing for the engine to check first.
  folderTrust: {
    kind: 'asks',
    trusted: () => true,
    trust: async () => false,
    howToTrust: (cwd) => `run \`cursor-agent\` in ${cwd} once and trust the workspace`,
  },

  async prepare(_env: Record<string, string>, config: SessionConfig): Promise<boolean> {
    if (config.mcpConfigPath && !existsSync(config.mcpConfigPath)) {
      throw new CalError('usage', `the MCP config ${config.mcpConfigPath} does not exist`);
    }
    // Checks only: nothing is written that the CLI reads at its start.
    return false;
  },

  // The id exists only once a run reports it: a first turn is bound by its result, never searched.
  ...structuredOnlyTmuxParts('cursor'),

  structured: {
    run: (req) => runCursorTurn(req),
    // Its published headless interface gives a message's first character no meaning (not installable here to measure).
    messageGuard: TEXT_ONLY_GUARD,
  },

  async scriptedModelEnv(): Promise<Record<string, string>> {
    return noScriptedModel('cursor', "Cursor CLI has no OpenAI- or Anthropic-compatible base URL (its --endpoint speaks Cursor's own Connect-RPC API)");
  },
};
