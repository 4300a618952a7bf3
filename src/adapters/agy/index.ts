import type { PinnedCli } from '../../handles/schema.js';
import { findExecutable, readVersion } from '../resolve.js';
import { noScriptedModel, structuredOnlyTmuxParts } from '../structured-only.js';
import type { CliAdapter, SessionConfig } from '../types.js';
import { probeAgy } from './binary.js';
import { runAgyTurn, agyToolPolicies } from './turn.js';
import { TEXT_ONLY_GUARD } from '../message-guard.js';

/**
 * Agy, Google's Antigravity CLI (a closed-source Go binary; research §E, from its release notes,
 * docs mirrors and third-party parsers; nothing here was run against the real binary).
 *
 * Capability-probed and structured only: a binary whose `--help` lacks `--output-format
 * stream-json` or `--conversation` is refused (`cli_unsupported`) before any handle exists. Each
 * turn is one `agy --output-format stream-json [--conversation <id>] -p <message>` process (see
 * turn.ts); the id comes from the first turn's `init` event. Agy's step log
 * (`brain/<id>/…/transcript_full.jsonl`) has no documented end-of-turn record, so there is no tmux
 * transport. Conversations are kept by id, not by folder; cal still resumes only in the original.
 *
 * Agy has no base-URL override, so it cannot run against cal's scripted model: only a user's
 * live run certifies it.
 */
export const agyAdapter: CliAdapter = {
  name: 'agy',
  executable: 'agy',
  capabilities: {
    tmuxContinuation: false,
    nativeResumeInTmux: false,
    structuredTransport: true,
    apiOnly: false,
    needsStableWorkingDir: false,
  },
  toolPolicies: agyToolPolicies,
  envNames: ['HOME'],
  liveCertificationOnly: 'agy has no base-URL override (it talks to Google Cloud Code Assist with your Google sign-in), so only a run with the real agy and a signed-in account can prove it',

  async resolveCli(cliPath: string | undefined, env: Record<string, string>): Promise<PinnedCli> {
    const found = findExecutable('agy', cliPath, env);
    const pinned = { ...found, version: await readVersion(found.realPath, env) };
    // A release without stream-json output or resume by id is refused before any handle exists.
    await probeAgy(pinned, env);
    return pinned;
  },

  folderTrust: { kind: 'none', why: 'agy runs in print mode, which has no folder trust' },

  async prepare(_env: Record<string, string>, _config: SessionConfig): Promise<boolean> {
    // No dialog to pre-answer in print mode; --system-prompt and --mcp-config are refused per turn.
    // Checks only: nothing is written that the CLI reads at its start.
    return false;
  },

  // The id exists only once a run reports it: a first turn is bound by its result, never searched.
  ...structuredOnlyTmuxParts('agy'),

  structured: {
    run: (req) => runAgyTurn(req),
    // Its published headless interface gives a message's first character no meaning (not installable here to measure).
    messageGuard: TEXT_ONLY_GUARD,
  },

  async scriptedModelEnv(): Promise<Record<string, string>> {
    return noScriptedModel('agy', 'agy has no base-URL override');
  },
};
