import path from 'node:path';
import { CalError } from '../../errors.js';
import type { PinnedCli, ToolPolicy } from '../../handles/schema.js';
import { isRule, plainText, typedText, type PaneScreen } from '../../tmux/screen.js';
import { ensurePlainDirSync, writePlainFileSync } from '../../util/private-file.js';
import { randomUUID } from '../../util/random.js';
import { readMcpServers } from '../mcp-config-file.js';
import { findExecutable, pinCli } from '../resolve.js';
import { pinSupported, type SupportedVersions } from '../versions.js';
import type { AcpLaunch, BindRequest, CliAdapter, LaunchPlan, LaunchRequest, ScriptedEnvOptions, SessionConfig, TranscriptBinding } from '../types.js';
import { CLINE_QUIET_ENV, clineDataDir, clineSessionsDir, scriptedClineEnv } from './home.js';
import { clineMessageGuard } from './message-guard.js';
import { ClineTurnObserver, normaliseForMatch } from './observer.js';
import { findLaunchedSession, sessionFiles, syncMirror } from './store.js';
import { acpMessageGuard } from '../acp-transport.js';

/**
 * Cline CLI (npm `cline`, a Bun-compiled binary behind a node loader), measured on 3.0.65
 * (docs/cline.md).
 *
 * Pane: `cline -i <message>` opens its TUI with the first message submitted; a resume is
 * `cline --id <id>`, which opens the TUI on the session without a prompt, so the message is
 * pasted. Cline chooses the session id: cal marks each launch's environment and binds the session
 * whose process carries the mark (store.ts). Every launch names its data folder (`--data-dir`,
 * the one Cline would use anyway), which keeps the session in the launched process. The answer and
 * the end come from the session's own files (its manifest's status and its conversation), read
 * into a JSONL mirror (store.ts, observer.ts), never from the screen.
 *
 * Structured transport: `cline --acp` (ACP `session/load` resumes by id; cal's shared ACP
 * client). `cline --json` runs one headless turn but cannot resume one: with `--id` it refuses
 * ("JSON output mode requires a prompt argument or piped stdin (interactive mode is unsupported)").
 */
export const clineVersions: SupportedVersions = { floor: '3.0.65', certified: '3.0.65' };

/** cal's tool policies as Cline's `--auto-approve` (default true in the CLI: every tool runs). */
const AUTO_APPROVE: Record<string, string | null> = { default: null, bypass: 'true' };
/** The prefix of the launch mark cal gives a fresh TUI as its pending session id. */
const LAUNCH = 'cal-launch-';
const MARK_VAR = 'CAL_CLINE_LAUNCH';

/** `--mcp-config F` as Cline's MCP settings (`CLINE_MCP_SETTINGS_PATH`, its nested `transport` form). */
export function clineMcpSettings(file: string): { mcpServers: Record<string, unknown> } {
  const servers: Record<string, unknown> = {};
  for (const [name, s] of Object.entries(readMcpServers(file, 'Cline CLI'))) {
    servers[name] =
      'command' in s
        ? { transport: { type: 'stdio', command: s.command, ...(s.args ? { args: s.args } : {}), ...(s.env ? { env: s.env } : {}), ...(s.cwd ? { cwd: s.cwd } : {}) } }
        : { transport: { type: s.type === 'sse' ? 'sse' : 'streamableHttp', url: s.url, ...(s.headers ? { headers: s.headers } : {}) } };
  }
  return { mcpServers: servers };
}

/** The environment of every launch: cal's quiet variables, and the session's MCP settings file. */
function launchEnv(req: LaunchRequest): Record<string, string> {
  const env = { ...req.env, ...CLINE_QUIET_ENV };
  if (req.config.mcpConfigPath) {
    if (!req.sessionDir) throw new CalError('internal', 'a Cline launch with an MCP config needs the session folder cal owns');
    ensurePlainDirSync(req.sessionDir, path.dirname(req.sessionDir));
    const file = path.join(req.sessionDir, 'cline-mcp.json');
    writePlainFileSync(file, `${JSON.stringify(clineMcpSettings(req.config.mcpConfigPath), null, 2)}\n`);
    env.CLINE_MCP_SETTINGS_PATH = file;
  }
  return env;
}

function tuiFlags(req: LaunchRequest): string[] {
  const { config } = req;
  const argv = ['--data-dir', clineDataDir(req.env)];
  if (config.model) argv.push('--model', config.model);
  if (config.systemPrompt !== null) argv.push('--system', config.systemPrompt);
  const approve = AUTO_APPROVE[config.toolPolicy];
  if (approve) argv.push('--auto-approve', approve);
  return argv;
}

/**
 * `cline --acp` (3.0.65) reads its provider, model and key only from the environment
 * (`CLINE_PROVIDER`, `CLINE_MODEL`, `CLINE_API_KEY`) or from a sign-in of its own (Cline,
 * ClinePass, ChatGPT): a provider set up with `cline auth` alone is refused ("Authentication
 * required: Call authenticate before starting a session", measured). `--model` is its
 * `CLINE_MODEL`; it takes no system prompt, which is refused, never dropped.
 */
const clineAcp: AcpLaunch = {
  command(req) {
    if (req.config.systemPrompt !== null) throw new CalError('usage', "cline: the ACP transport takes no --system-prompt (Cline's ACP mode has no such option); use --transport tmux");
    const env: Record<string, string> = { ...launchEnv(req), CLINE_DATA_DIR: clineDataDir(req.env) };
    if (req.config.model) env.CLINE_MODEL = req.config.model;
    return { argv: [req.cli.realPath, '--acp'], env };
  },
  // Cline's slash commands (/newtask, /smol…) are ACP commands too: every ACP agent's guard.
  messageGuard: acpMessageGuard,
};

/** Cline's input box: the row opening with `❯` between the last two rules; its placeholder is grey. */
const PLACEHOLDER_FG = ['38;5;102', '38;5;240'];
export function readClineInputBox(screen: PaneScreen): string | null {
  const rules = screen.lines.flatMap((line, i) => (isRule(line) ? [i] : []));
  const [top, bottom] = rules.slice(-2);
  if (top === undefined || bottom === undefined || bottom - top < 2) return null;
  const row = screen.lines[top + 1] as string;
  if (!/^❯ /.test(plainText(row))) return null;
  return typedText(row, PLACEHOLDER_FG).replace(/^❯ ?/, '').trim();
}

export const clineAdapter: CliAdapter = {
  name: 'cline',
  executable: 'cline',
  capabilities: {
    tmuxContinuation: true,
    nativeResumeInTmux: true,
    structuredTransport: true,
    apiOnly: false,
    needsStableWorkingDir: true,
  },
  toolPolicies: Object.keys(AUTO_APPROVE) as ToolPolicy[],
  envNames: ['HOME', 'CLINE_DIR', 'CLINE_DATA_DIR'],
  versions: clineVersions,
  folderTrust: { kind: 'none', why: 'Cline CLI has no folder-trust dialog or setting: it runs the same in any folder' },

  async resolveCli(cliPath: string | undefined, env: Record<string, string>): Promise<PinnedCli> {
    const found = findExecutable('cline', cliPath, env);
    return pinSupported('Cline CLI', await pinCli(found, env), clineVersions);
  },

  async prepare(_env: Record<string, string>, config: SessionConfig): Promise<boolean> {
    if (!(config.toolPolicy in AUTO_APPROVE)) {
      throw new CalError('usage', `cline: tool policy ${config.toolPolicy} has no Cline equivalent (known: ${Object.keys(AUTO_APPROVE).join(', ')})`);
    }
    if (config.mcpConfigPath) clineMcpSettings(config.mcpConfigPath);
    // Checks only: nothing is written that the CLI reads at its start.
    return false;
  },

  launch(req: LaunchRequest): LaunchPlan {
    const env = launchEnv(req);
    if (req.mode === 'resume') {
      if (!req.sessionId) throw new CalError('internal', 'cline resume without a session id');
      // `--id` opens the TUI on the session and drops a prompt given with it: the engine pastes.
      return { argv: [req.cli.realPath, ...tuiFlags(req), '--id', req.sessionId], env, cwd: req.config.cwd, deliversMessage: false, sessionId: req.sessionId };
    }
    const mark = `${LAUNCH}${randomUUID()}`;
    env[MARK_VAR] = mark;
    // After `--`, a message that starts with '-' is the prompt, never an option.
    return { argv: [req.cli.realPath, ...tuiFlags(req), '--tui', '--', req.message], env, cwd: req.config.cwd, deliversMessage: true, sessionId: mark };
  },

  async bindTranscript(req: BindRequest): Promise<TranscriptBinding | null> {
    if (!req.sessionId?.startsWith(LAUNCH)) return null;
    const needle = normaliseForMatch(req.message).trim();
    const sessions = clineSessionsDir(req.env);
    const id = await findLaunchedSession(sessions, req.config.cwd, `${MARK_VAR}=${req.sessionId}`, (prompt) => normaliseForMatch(prompt).includes(needle), req.sentAt);
    if (!id) return null;
    const mirror = sessionFiles(sessions, id).mirror;
    await syncMirror(mirror);
    return { path: mirror, sessionId: id };
  },

  refreshTranscript(transcriptPath: string): Promise<void> {
    return syncMirror(transcriptPath);
  },

  observeTurn(message: string, notBefore?: Date, match?) {
    // Cline stores a prompt trimmed.
    return new ClineTurnObserver(message.trim(), notBefore, match);
  },

  draft: { read: readClineInputBox, keys: ['End', 'C-u'] },
  // Under load its TUI may drop an Enter or act on one seconds late, and a second Enter into a
  // TUI that was only slow submits the message twice (docs/cline.md, "The pane").
  pasteSubmitDelayMs: 'when-shown',
  // Its TUI keeps the CR tmux pastes for each LF, and the model got "\r" for "\n" (measured).
  pasteKeepsLineFeeds: true,
  messageGuard: clineMessageGuard,

  structured: {
    run: async (req) => (await import('../acp/client.js')).runAcpTurn(req, clineAcp, 'cline (ACP)'),
    messageGuard: acpMessageGuard,
  },
  acp: clineAcp,

  scriptedModelEnv(dir: string, modelUrl: string, env: Record<string, string>, opts?: ScriptedEnvOptions): Promise<Record<string, string>> {
    return scriptedClineEnv(dir, modelUrl, env, opts?.keepHome ?? false);
  },
};
