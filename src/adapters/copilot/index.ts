import { existsSync } from 'node:fs';
import { randomUUID } from '../../util/random.js';
import type { PinnedCli } from '../../handles/schema.js';
import { readJsonlFrom } from '../../transcripts/jsonl-tail.js';
import { betweenRules } from '../input-box.js';
import { findExecutable, pinCli } from '../resolve.js';
import { pinSupported, type SupportedVersions } from '../versions.js';
import type { BindRequest, CliAdapter, LaunchPlan, LaunchRequest, ScriptedEnvOptions, SessionConfig, StructuredRunRequest, StructuredTurnResult, TranscriptBinding } from '../types.js';
import { copilotVersion, nativeCopilotBinary } from './binary.js';
import { runHeadlessTurn } from './headless.js';
import { classifyEvent, CopilotTurnObserver, normaliseForMatch } from './events.js';
import { eventsFile, isTrusted, scriptedCopilotEnv, trustDialogKeys, trustFolder } from './home.js';
import { slashCommandGuard } from '../message-guard.js';
import { copilotMessageGuard } from './message-guard.js';
import { checkConfig, copilotToolPolicies, sessionEnv, sessionFlags, sessionIdFor } from './launch.js';

/**
 * GitHub Copilot CLI (`@github/copilot`, measured on 1.0.102; docs/copilot.md).
 *
 * tmux transport. cal chooses the session id (`--session-id=<uuid>` creates it) and resumes it
 * with `--resume=<uuid>`; the first message of every launch goes in `--interactive=<message>`
 * (the TUI submits it once it is ready; the `=` form keeps a leading '-' text). Answer and end
 * come only from Copilot's own event log, `<COPILOT_HOME>/session-state/<id>/events.jsonl`
 * (events.ts). Folder trust follows cal's trust policy (`folderTrust`): by default `trustedFolders`
 * in Copilot's config.json gets the folder (home.ts), in the user's own home as in one cal manages.
 *
 * Structured transport: Copilot's own JSON mode (`--output-format=json`, headless.ts): its stream
 * is the event log's own events, ended by a `result` line, so one reader serves both transports;
 * `copilot --acp` would need a long-lived process per session for what one process per turn does.
 */
/** Only the pinned release has been measured and certified so far: it is the floor too. */
export const copilotVersions: SupportedVersions = { floor: '1.0.102', certified: '1.0.102' };

/** A structured turn: Copilot's JSON mode, one process per turn, the message on stdin (headless.ts). */
function runStructured(req: StructuredRunRequest): Promise<StructuredTurnResult> {
  const session = sessionIdFor(req, randomUUID);
  const argv = [req.cli.realPath, session.flag, ...sessionFlags(req), '--output-format=json'];
  return runHeadlessTurn(req, session.id, {
    argv,
    env: sessionEnv(req),
    transcript: (id) => (existsSync(eventsFile(req.env, id)) ? eventsFile(req.env, id) : null),
  });
}

export const copilotAdapter: CliAdapter = {
  name: 'copilot',
  executable: 'copilot',
  capabilities: {
    tmuxContinuation: true,
    nativeResumeInTmux: true,
    structuredTransport: true,
    apiOnly: false,
    // Sessions are kept by id in one folder, whatever the working directory; cal still relaunches
    // in the original one.
    needsStableWorkingDir: false,
  },
  toolPolicies: copilotToolPolicies,
  envNames: ['HOME', 'COPILOT_HOME', 'COPILOT_PROVIDER_BASE_URL', 'COPILOT_PROVIDER_TYPE', 'COPILOT_PROVIDER_API_KEY', 'COPILOT_MODEL', 'COPILOT_OFFLINE'],
  versions: copilotVersions,

  async resolveCli(cliPath: string | undefined, env: Record<string, string>): Promise<PinnedCli> {
    const found = findExecutable('copilot', cliPath, env);
    const native = nativeCopilotBinary(found);
    return pinSupported('GitHub Copilot CLI', await pinCli({ path: found.path, realPath: native }, env, copilotVersion), copilotVersions);
  },

  readVersion: copilotVersion,

  // The TUI asks "Do you trust the files in this folder?" in a folder its config.json does not
  // list; `copilot -p` never asks (it leaves the folder's own hooks and MCP servers out instead).
  folderTrust: {
    kind: 'asks',
    trusted: (env, cwd, transport) => transport === 'structured' || isTrusted(env, cwd),
    trust: (env, cwd) => trustFolder(env, cwd),
    howToTrust: (cwd) => `run \`copilot\` in ${cwd} once and answer yes to "Do you trust the files in this folder?" (it lists the folder in trustedFolders of ~/.copilot/config.json)`,
  },

  async prepare(_env: Record<string, string>, config: SessionConfig): Promise<boolean> {
    checkConfig(config);
    return false;
  },

  launch(req: LaunchRequest): LaunchPlan {
    const session = sessionIdFor(req, randomUUID);
    const argv = [req.cli.realPath, session.flag, ...sessionFlags(req), `--interactive=${req.message}`];
    return { argv, env: sessionEnv(req), cwd: req.config.cwd, deliversMessage: true, sessionId: session.id };
  },

  async bindTranscript(req: BindRequest): Promise<TranscriptBinding | null> {
    // Copilot writes the log at start (`session.start`), the prompt when it takes it.
    if (!req.sessionId) return null;
    const file = eventsFile(req.env, req.sessionId);
    const read = await readJsonlFrom(file, 0);
    if (read.missing) return null;
    const needle = normaliseForMatch(req.message);
    const recorded = read.records.some((r) => {
      const rec = classifyEvent(r.value);
      return rec?.kind === 'user' && !rec.injected && normaliseForMatch(rec.text).includes(needle);
    });
    return recorded ? { path: file, sessionId: req.sessionId } : null;
  },

  observeTurn(message: string, notBefore?: Date) {
    return new CopilotTurnObserver(message, notBefore);
  },

  // The TUI records a prompt the moment it takes it, before any model reply (measured: < 50 ms).
  promptRecordedWithinMs: 10_000,
  // The trust dialog of a Copilot that lost cal's `trustedFolders` entry to a concurrent rewrite.
  preAnsweredDialogKeys: trustDialogKeys,

  // Escape does not interrupt a running turn (the footer says "esc esc interrupt", and two
  // Escapes sent by tmux did nothing, measured); Ctrl-C does, and Copilot records `abort`.
  interruptKeys: ['C-c'],

  /**
   * The box is the rows between the last two rules, its first row opening with `❯` (alone when
   * empty: 1.0.102 draws no placeholder there). End Ctrl-U empties a one-line draft however it
   * wraps; a draft of several lines (typed with Ctrl-J) loses one line a round (docs/drafts.md).
   */
  draft: { read: betweenRules(/^❯(?: |$)/), keys: ['End', 'C-u'] },

  messageGuard: copilotMessageGuard,


  structured: {
    run: (req) => runStructured(req),
    // `copilot -p` (1.0.102) runs a leading '/' as a slash command ("/compact" compacted and the
    // turn failed); "\u200b/exit" is text in its pane, so the same guard here.
    messageGuard: slashCommandGuard('`copilot -p` runs a leading "/" as a slash command ("/compact")'),
  },

  scriptedModelEnv(dir: string, modelUrl: string, env: Record<string, string>, opts?: ScriptedEnvOptions): Promise<Record<string, string>> {
    return scriptedCopilotEnv(dir, modelUrl, env, opts);
  },
};
