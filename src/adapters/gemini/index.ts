import { randomUUID } from '../../util/random.js';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CalError } from '../../errors.js';
import type { PinnedCli, ToolPolicy } from '../../handles/schema.js';
import { readJsonlFrom } from '../../transcripts/jsonl-tail.js';
import { findExecutable, pinCli, readVersion } from '../resolve.js';
import { pinSupported, type SupportedVersions } from '../versions.js';
import type { BindRequest, CliAdapter, LaunchPlan, LaunchRequest, PromptMatch, SessionConfig, StructuredRunRequest, StructuredTurnResult, TranscriptBinding } from '../types.js';
import { acpMessageGuard } from '../acp-transport.js';
import { slashCommandGuard } from '../message-guard.js';
import { geminiLeads, geminiMessageGuard } from './message-guard.js';
import { headlessArgv, runHeadlessTurn } from './headless.js';
import { SESSION_HEADER, checkRetentionOff, geminiDir, isManagedGeminiHome, scriptedGeminiEnv } from './home.js';
import { geminiMcpServers, prepareManagedHome, readUserSettings } from './managed-home.js';
import { GeminiTurnObserver, classifyRecord, contentText, normaliseForMatch } from './transcript.js';
import { lastMarkedRow } from '../input-box.js';
import { trustedByFile } from '../trusted-folders-file.js';

/**
 * Google Gemini CLI (measured on 0.61.0; research: gemini-pi-cli.md G1–G5 and
 * adapters-gemini-cursor-agy-claude-structured.md §A–C).
 *
 * Every launch of a session runs in a Gemini home cal owns (managed-home.ts): the user's settings
 * plus the launch's MCP servers, cal's system prompt as one more context file, bounded retries,
 * retention off; the user's login files linked in. Sessions are keyed by that home and the exact
 * cwd, so both stay the same for every resume.
 *
 * tmux transport. cal chooses the session id (`--session-id <uuid>`), resumes it with
 * `--resume <uuid>`, and hands the first message of every launch to `-i` (the TUI submits it
 * once it is ready, new and resumed alike). Folder trust is pre-answered by
 * `GEMINI_CLI_TRUST_WORKSPACE=true`, which writes nothing (`--skip-trust` alone does not load the
 * workspace settings). Completion and failure come only from the session file (transcript.ts).
 * A pasted message gets its Enter 300 ms after the paste (`pasteSubmitDelayMs`): an Enter in the
 * same burst is dropped by the TUI.
 *
 * A model that keeps failing (HTTP 5xx/429): after `general.maxAttempts` the TUI (with
 * `ui.errorVerbosity: "full"`) asks "Keep trying / Stop" and records nothing until answered.
 * `stallKeys` answer it: Down, Enter selects "Stop" (the CLI then records its own error, which
 * fails the turn); the same keys are a no-op in the input while a reply is merely slow (Down on
 * the newest history entry, Enter on an empty input), and they are pressed only while the
 * session file shows the turn awaiting the model, never while a tool runs or asks to run.
 *
 * Structured transport: headless `-p … -o stream-json` per turn (headless.ts). ACP
 * (`gemini --acp`) would give per-session MCP servers without a file, but needs a long-lived
 * process per session; one process per turn is what cal's structured transport is, and the
 * managed home gives MCP servers to both transports alike.
 */

/**
 * Gemini's own environment additions: trust the folder it is started in (writes nothing), and
 * never relaunch itself in a child process. Measured on 0.61.0: a relaunched Gemini (the default)
 * ignores SIGHUP and SIGTERM and survives its tmux session being killed, parent and child alike
 * (only cal's end of the pane's tagged processes, which sends SIGKILL, ends them); with
 * GEMINI_CLI_NO_RELAUNCH=true it is one process that ends with its pane even without cal.
 */
const geminiEnv = {
  GEMINI_CLI_TRUST_WORKSPACE: 'true',
  GEMINI_CLI_NO_RELAUNCH: 'true',
} as const;

/**
 * The trust policy's part of a launch's environment (engine/folder-trust.ts): trusted, the
 * variable; not, the user's own `trustedFolders.json` (the managed home has none of its own, so
 * Gemini would otherwise find every folder untrusted), and the variable only if the user set it.
 */
function trustEnv(req: LaunchRequest, env: Record<string, string>): void {
  if (req.config.trustWorkingDir !== false) return;
  if (req.env.GEMINI_CLI_TRUST_WORKSPACE === undefined) delete env.GEMINI_CLI_TRUST_WORKSPACE;
  else env.GEMINI_CLI_TRUST_WORKSPACE = req.env.GEMINI_CLI_TRUST_WORKSPACE;
  env.GEMINI_CLI_TRUSTED_FOLDERS_PATH = userTrustedFolders(req.env);
}

function userTrustedFolders(env: Record<string, string>): string {
  return env.GEMINI_CLI_TRUSTED_FOLDERS_PATH || path.join(geminiDir(env), 'trustedFolders.json');
}

/** Whether Gemini, given nothing by cal, trusts `cwd`: the user's variable, trust switched off, or the user's trustedFolders.json. */
function geminiTrusts(env: Record<string, string>, cwd: string): boolean {
  if (env.GEMINI_CLI_TRUST_WORKSPACE === 'true') return true;
  const folderTrust = readUserSettings(env).security as { folderTrust?: { enabled?: unknown } } | undefined;
  if (folderTrust?.folderTrust?.enabled === false) return true;
  return trustedByFile(userTrustedFolders(env), cwd);
}

/**
 * The floor is the first release with `--session-id` (0.41.0; 0.40.0's `--help` has none, and
 * the id chosen up front is how cal names a session before it has a transcript): 0.41.0, 0.51.0,
 * 0.58.0 and the pinned 0.61.0 passed the full certification here (docs/certify.md).
 */
export const geminiVersions: SupportedVersions = { floor: '0.41.0', certified: '0.61.0' };

/** cal's tool policies as Gemini approval modes. */
/**
 * Measured on 0.61.0: even `gemini --version` starts writing `projects.json` in its home and exits
 * before the rename, leaving `projects.json.<uuid>.tmp` files behind. So it is asked in a
 * throwaway home, never the user's, both when a session pins the CLI and when a pinned file has
 * changed since.
 */
async function readGeminiVersion(executable: string, env: Record<string, string>): Promise<string> {
  const probeHome = await fs.mkdtemp(path.join(os.tmpdir(), 'cal-gemini-version-'));
  try {
    return await readVersion(executable, { ...env, ...geminiEnv, GEMINI_CLI_HOME: probeHome });
  } finally {
    await fs.rm(probeHome, { recursive: true, force: true });
  }
}

const APPROVAL_MODES: Record<string, string | null> = {
  default: null,
  'read-only': 'plan',
  'accept-edits': 'auto_edit',
  bypass: 'yolo',
};

/** The session files of one id: `<gemini>/tmp/<slug>/chats/session-<minute>-<id8>.jsonl` in any project. */
export async function sessionFiles(dir: string, sessionId: string): Promise<string[]> {
  const tmp = path.join(dir, 'tmp');
  const suffix = `-${sessionId.slice(0, 8)}.jsonl`;
  const out: string[] = [];
  let projects: string[];
  try {
    projects = await fs.readdir(tmp);
  } catch {
    return [];
  }
  for (const project of projects) {
    let names: string[];
    try {
      names = await fs.readdir(path.join(tmp, project, 'chats'));
    } catch {
      continue;
    }
    for (const name of names) if (name.startsWith('session-') && name.endsWith(suffix)) out.push(path.join(tmp, project, 'chats', name));
  }
  return out.sort();
}

/**
 * The real transcript among the files of one id: its header names the whole id and it holds a
 * user record with our message (a resume in a later minute also leaves a stray file holding only
 * a header and the context).
 */
export async function findTranscript(dir: string, sessionId: string, message: string, sentAt: Date | null): Promise<string | null> {
  const needle = normaliseForMatch(message);
  for (const file of await sessionFiles(dir, sessionId)) {
    const read = await readJsonlFrom(file, 0);
    if (read.missing) continue;
    let ours = false;
    let found = false;
    for (const r of read.records) {
      const rec = classifyRecord(r.value);
      if (rec.kind === 'header') ours = rec.sessionId === sessionId;
      if (!ours || rec.kind !== 'user') continue;
      if (sentAt && rec.record.timestamp && Date.parse(rec.record.timestamp) < sentAt.getTime()) continue;
      const text = contentText(rec.record.content as string | Array<Record<string, unknown>>);
      if (text !== null && normaliseForMatch(text).includes(needle)) {
        found = true;
        break;
      }
    }
    if (found) return file;
  }
  return null;
}

/**
 * The pending id of a fresh launch: the session id cal chose, at the managed home it lives in
 * (`<uuid>@<home>`), so that finding its transcript needs nothing but the handle, also for a cal
 * that died right after the launch.
 */
export function pendingToken(sessionId: string, home: string): string {
  return `${sessionId}@${home}`;
}

export function parsePending(token: string): { sessionId: string; home: string | null } {
  const at = token.indexOf('@');
  return at < 0 ? { sessionId: token, home: null } : { sessionId: token.slice(0, at), home: token.slice(at + 1) };
}

function needSessionDir(req: LaunchRequest): string {
  if (!req.sessionDir) throw new CalError('internal', 'a Gemini launch needs the session folder cal owns (its Gemini home lives there)');
  return req.sessionDir;
}

/** The flags every launch gets, TUI and headless alike. */
function sharedFlags(config: SessionConfig): string[] {
  const argv: string[] = [];
  if (config.model) argv.push('--model', config.model);
  const approval = APPROVAL_MODES[config.toolPolicy];
  if (approval) argv.push('--approval-mode', approval);
  return argv;
}

/** The environment of a launch: the managed home (written now), Gemini's additions, and the scripted model's session header. */
function launchEnv(req: LaunchRequest, sessionId: string): { env: Record<string, string>; home: string } {
  const managed = prepareManagedHome(req.env, req.config, needSessionDir(req));
  const env: Record<string, string> = { ...managed.env, ...geminiEnv };
  trustEnv(req, env);
  if (isManagedGeminiHome(req.env)) {
    // Only against cal's scripted model: Gemini sends no session id of its own with API-key
    // auth, so each request names its session in a header the model's log keys requests by.
    const own = (env.GEMINI_CLI_CUSTOM_HEADERS ?? '').trim();
    env.GEMINI_CLI_CUSTOM_HEADERS = `${own ? `${own}, ` : ''}${SESSION_HEADER}: ${sessionId}`;
  }
  return { env, home: managed.home };
}

async function runStructured(req: StructuredRunRequest): Promise<StructuredTurnResult> {
  let sessionId: string;
  if (req.mode === 'resume') {
    if (!req.sessionId) throw new CalError('internal', 'gemini resume without a session id');
    sessionId = req.sessionId;
  } else {
    sessionId = req.sessionId ? parsePending(req.sessionId).sessionId : randomUUID();
  }
  const { env } = launchEnv(req, sessionId);
  return runHeadlessTurn(req, sessionId, {
    argv: headlessArgv(req, sessionId, sharedFlags(req.config)),
    env,
    transcript: (id) => findTranscript(geminiDir(env), id, req.message, null),
  });
}

export const geminiAdapter: CliAdapter = {
  name: 'gemini',
  executable: 'gemini',
  capabilities: {
    tmuxContinuation: true,
    nativeResumeInTmux: true,
    structuredTransport: true,
    apiOnly: false,
    needsStableWorkingDir: true,
  },
  toolPolicies: Object.keys(APPROVAL_MODES) as ToolPolicy[],
  envNames: ['HOME', 'GEMINI_CLI_HOME', 'GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GOOGLE_GEMINI_BASE_URL'],
  versions: geminiVersions,
  pasteSubmitDelayMs: 300,
  // Checked every 15 s: with MAX_ATTEMPTS the dialog is up within about 20 s (5 s and 10 s of
  // backoff, 30% jitter), so a persistent 5xx fails the turn within about 30 s.
  stallKeys: { afterMs: 15_000, keys: ['Down', 'Enter'] },

  async resolveCli(cliPath: string | undefined, env: Record<string, string>): Promise<PinnedCli> {
    const found = findExecutable('gemini', cliPath, env);
    return pinSupported('Gemini CLI', await pinCli(found, env, readGeminiVersion), geminiVersions);
  },

  readVersion: readGeminiVersion,

  // Folder trust is on by default: the TUI asks "Do you trust the files in this folder?", and
  // headless `-p` in an untrusted folder exits 55 (research gemini-pi-cli.md). cal's trust is
  // GEMINI_CLI_TRUST_WORKSPACE on the launch (trustEnv), which writes nothing.
  folderTrust: {
    kind: 'asks',
    trusted: (env, cwd) => geminiTrusts(env, cwd),
    trust: async () => false,
    howToTrust: (cwd) => `run \`gemini\` in ${cwd} once and answer "Trust folder" (it writes ~/.gemini/trustedFolders.json)`,
  },

  async prepare(env: Record<string, string>, config: SessionConfig): Promise<boolean> {
    if (!(config.toolPolicy in APPROVAL_MODES)) {
      throw new CalError('usage', `gemini: tool policy ${config.toolPolicy} has no Gemini approval mode (known: ${Object.keys(APPROVAL_MODES).join(', ')})`);
    }
    // Read now, so a bad file is a usage error before anything is sent, not a failure in a pane.
    readUserSettings(env);
    if (config.mcpConfigPath) geminiMcpServers(config.mcpConfigPath);
    checkRetentionOff(env);
    // Checks only: nothing is written that the CLI reads at its start.
    return false;
  },

  launch(req: LaunchRequest): LaunchPlan {
    const argv = [req.cli.realPath, ...sharedFlags(req.config)];
    let sessionId: string;
    if (req.mode === 'resume') {
      if (!req.sessionId) throw new CalError('internal', 'gemini resume without a session id');
      sessionId = req.sessionId;
      argv.push('--resume', sessionId);
    } else {
      // A relaunch of a session that never bound keeps the id it chose first.
      sessionId = req.sessionId ? parsePending(req.sessionId).sessionId : randomUUID();
      argv.push('--session-id', sessionId);
    }
    // The `--opt=value` form keeps a message that starts with '-' from being read as a flag.
    argv.push(`--prompt-interactive=${req.message}`);
    const { env, home } = launchEnv(req, sessionId);
    return { argv, env, cwd: req.config.cwd, deliversMessage: true, sessionId: pendingToken(sessionId, home) };
  },

  async bindTranscript(req: BindRequest): Promise<TranscriptBinding | null> {
    if (!req.sessionId) return null;
    const { sessionId, home } = parsePending(req.sessionId);
    // Bound only once the CLI recorded our message: that is when the id becomes resumable.
    const dir = home ? path.join(home, '.gemini') : geminiDir(req.env);
    const file = await findTranscript(dir, sessionId, req.message, null);
    return file ? { path: file, sessionId } : null;
  },

  observeTurn(message: string, notBefore?: Date, match?: PromptMatch) {
    return new GeminiTurnObserver(message, notBefore, match);
  },

  /**
   * The input is the last row opening with `>` (`*` in YOLO mode, which the bypass policy
   * starts; `!` is shell mode, no box cal pastes into), its placeholder in grey after the
   * cursor; one Ctrl-U empties it (docs/drafts.md).
   */
  draft: { read: lastMarkedRow(/^ ?[>*] /, { fg: ['38;5;248'], text: /^Type your message or @path\/to\/file$/ }), keys: ['End', 'C-u'] },
  messageGuard: geminiMessageGuard,

  structured: {
    run: (req) => runStructured(req),
    // `gemini -p` (0.61.0) runs a trimmed message starting with '/' as a slash command ("/init"
    // sent its own prompt, "/model" no request at all); `@path` includes the file, the user's to use.
    messageGuard: slashCommandGuard('`gemini -p` runs a leading "/" as a slash command (/init, /model)', { '@': geminiLeads['@'] }),
  },

  // `gemini --acp` (0.61.0; `--experimental-acp` is its deprecated name), in the same managed home.
  // Its session/load quirk is the shared client's to handle (acp/gemini-load.ts), for --provider acp too.
  acp: {
    command(req) {
      const { env } = launchEnv(req, req.sessionId ?? randomUUID());
      return { argv: [req.cli.realPath, '--acp', ...sharedFlags(req.config)], env };
    },
    messageGuard: acpMessageGuard,
  },

  scriptedModelEnv(dir: string, modelUrl: string, env: Record<string, string>): Promise<Record<string, string>> {
    return scriptedGeminiEnv(dir, modelUrl, env);
  },
};
