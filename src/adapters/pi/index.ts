import { existsSync } from 'node:fs';
import path from 'node:path';
import { CalError } from '../../errors.js';
import type { PinnedCli } from '../../handles/schema.js';
import { readJsonlFrom } from '../../transcripts/jsonl-tail.js';
import { findExecutable, pinCli } from '../resolve.js';
import { compareVersions, pinSupported, type SupportedVersions } from '../versions.js';
import type { BindRequest, CliAdapter, LaunchPlan, LaunchRequest, PromptMatch, SessionConfig, TranscriptBinding } from '../types.js';
import { TEXT, type MessageGuard } from '../message-guard.js';
import { scriptedPiEnv } from './home.js';
import { chosenFile, sessionFileFor, sessionFlags, piToolPolicies } from './launch.js';
import { piStructured } from './structured.js';
import { classifyRecord, normaliseForMatch, PiTurnObserver, SessionHeader } from './session.js';
import { betweenRules } from '../input-box.js';

/**
 * Pi coding agent (`@earendil-works/pi-coding-agent` from 1.0, `@mariozechner/pi-coding-agent`
 * up to 0.73.1; measured on 0.73.1 and 1.6.0, docs/pi.md; research:
 * gemini-pi-cli.md P1–P5).
 *
 * cal chooses the session file and launches `pi --session <abs path> <message>`: Pi creates the
 * file there on its first reply, and the same command resumes it from any folder (Pi reads the
 * working directory from the file's header). The native id cal keeps is Pi's session id (the
 * header's UUIDv7); a resume finds the file with that header in the folder cal chose it in. Pi has no
 * startup dialogs, so nothing is pre-answered and nothing is written into the user's Pi config;
 * the only thing on disk that cal decides is the session file's name, in the folder Pi itself uses
 * for the working directory (so Pi's own `/resume` lists it).
 */
/**
 * The floor is the oldest release that passed every certification here (docs/certify.md, "How
 * the floors were measured"): 0.51.0. 0.50.7 does not take the scripted model's provider from
 * `models.json` ("No models available"), so nothing older can be driven here. Releases before
 * 0.68.1 name no session in their model requests; CertParallelIsolation then tells the two
 * sessions apart by what each request carries. 0.51.0, 0.60.0, 0.65.2, 0.68.1, 0.70.6 and the
 * pinned 0.73.1 pass all (0.51.6, 0.52.12 and 0.55.4 the three certifications tried on them).
 */
export const piVersions: SupportedVersions = { floor: '0.51.0', certified: '1.6.0' };

/**
 * In argv a leading '-' is a flag and '@' a file to attach: a space keeps it text. Pasted, the
 * editor trims that space and would run a leading '!' as a shell command and a leading '/' as a
 * slash command; a zero-width space (not trimmed, invisible to people) keeps those text. The
 * editor trims every leading blank first (tab, LF, CR, U+00A0, U+3000, U+FEFF…), so the guard
 * looks past them too: ' !cmd' would otherwise run as a shell command.
 */
const piMessageGuard: MessageGuard = {
  passesOver: 'blanks',
  leads: {
    '/': { means: 'a leading "/" runs a slash command, prompt template or skill', readAt: 'visible', action: 'zero-width-space' },
    '!': { means: 'a leading "!" runs a shell command', readAt: 'visible', action: 'zero-width-space' },
    '-': { means: 'a first "-" in the launch argv is a flag', readAt: 'start', action: 'space' },
    '@': { means: 'a first "@" in the launch argv attaches a file', readAt: 'start', action: 'space' },
    '#': TEXT,
    '?': TEXT,
    '&': TEXT,
    '$': TEXT,
  },
};

export const piAdapter: CliAdapter = {
  name: 'pi',
  executable: 'pi',
  capabilities: {
    tmuxContinuation: true,
    nativeResumeInTmux: true,
    structuredTransport: true,
    apiOnly: false,
    // `--session <path>` resumes from any folder (the header's cwd is used); cal still relaunches
    // in the original one.
    needsStableWorkingDir: false,
  },
  toolPolicies: piToolPolicies,
  envNames: ['HOME', 'PI_CODING_AGENT_DIR', 'PI_CODING_AGENT_SESSION_DIR', 'PI_OFFLINE'],
  versions: piVersions,

  async resolveCli(cliPath: string | undefined, env: Record<string, string>): Promise<PinnedCli> {
    const found = findExecutable('pi', cliPath, env);
    return pinSupported('Pi', await pinCli(found, { ...env, PI_OFFLINE: '1' }), piVersions);
  },

  // Pi appends each message to its session file as it ends, the user's before any model call
  // (read in session-manager.js of 0.51.0-1.6.0): a message still unrecorded after this long was
  // not taken, or Pi cannot write its file (it shows the error in the pane and writes nothing
  // more), and the turn fails typed instead of at the timeout. Below 0.99.1 a fresh session's
  // file is written only with the first reply.
  promptRecordedWithinMs: 15_000,
  recordsFreshPromptLate: (version) => compareVersions(version, '0.99.1') < 0,

  folderTrust: { kind: 'none', why: 'Pi has no trust, auth or theme dialog: it runs the same in any folder' },

  async prepare(_env: Record<string, string>, config: SessionConfig): Promise<boolean> {
    // No trust, auth or theme dialog exists: nothing to pre-answer. An MCP config must be readable
    // now, not found missing inside the pane.
    if (config.mcpConfigPath && !existsSync(config.mcpConfigPath)) {
      throw new CalError('usage', `the MCP config ${config.mcpConfigPath} does not exist`);
    }
    // Checks only: nothing is written that the CLI reads at its start.
    return false;
  },

  launch(req: LaunchRequest): LaunchPlan {
    const sessionFile = sessionFileFor(req);
    const flags = sessionFlags(req);
    // The first message goes in argv: the TUI prompts with it once it is ready (measured: no
    // keystroke race, no bracketed paste before the TUI asked for it, tabs kept). Pi's parser
    // has no `--`; the message guard keeps a leading '-' or '@' from being read as a flag or a file.
    const argv = [req.cli.realPath, '--session', sessionFile, ...flags.argv, req.message];
    return { argv, env: flags.env, cwd: req.config.cwd, deliversMessage: true, sessionId: sessionFile };
  },

  async bindTranscript(req: BindRequest): Promise<TranscriptBinding | null> {
    // Pi writes a new session's file with its first message (below 0.99.1: with its first reply).
    // The id is the file a pane launch chose, or (structured) the pending id the file is named after.
    if (!req.sessionId) return null;
    const file = path.isAbsolute(req.sessionId) ? req.sessionId : chosenFile(req.env, req.config.cwd, req.sessionId);
    if (!file) return null;
    const read = await readJsonlFrom(file, 0);
    if (read.missing) return null;
    const needle = normaliseForMatch(req.message);
    const recorded = read.records.some((r) => {
      const rec = classifyRecord(r.value);
      return rec.kind === 'user' && rec.text !== null && normaliseForMatch(rec.text).includes(needle);
    });
    if (!recorded) return null;
    const header = read.records.map((r) => SessionHeader.safeParse(r.value)).find((h) => h.success);
    if (!header?.success) return null;
    return { path: file, sessionId: header.data.id };
  },

  observeTurn(message: string, notBefore?: Date, match?: PromptMatch) {
    return new PiTurnObserver(message, notBefore, match);
  },

  structured: piStructured,

  /** The editor is the rows between the last two rules, with no marker; one Ctrl-U empties it (docs/drafts.md). */
  draft: { read: betweenRules(null), keys: ['End', 'C-u'] },
  messageGuard: piMessageGuard,

  scriptedModelEnv(dir: string, modelUrl: string, env: Record<string, string>): Promise<Record<string, string>> {
    return scriptedPiEnv(dir, modelUrl, env);
  },
};
