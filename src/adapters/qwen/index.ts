import { readFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from '../../util/random.js';
import { CalError } from '../../errors.js';
import type { PinnedCli, ToolPolicy } from '../../handles/schema.js';
import { readJsonlFrom } from '../../transcripts/jsonl-tail.js';
import { readMcpServers } from '../mcp-config-file.js';
import { findExecutable, pinCli } from '../resolve.js';
import { pinSupported, type SupportedVersions } from '../versions.js';
import type { BindRequest, CliAdapter, LaunchPlan, LaunchRequest, ScriptedEnvOptions, SessionConfig, StructuredRunRequest, StructuredTurnResult, TranscriptBinding } from '../types.js';
import { acpMessageGuard } from '../acp-transport.js';
import { slashCommandGuard, type MessageGuard } from '../message-guard.js';
import { ensurePlainDirSync, writePlainFileSync } from '../../util/private-file.js';
import { readQwenInputBox } from './input-box.js';
import { runHeadlessTurn } from './headless.js';
import { qwenDir, scriptedQwenEnv, sessionFilePath } from './home.js';
import { trustedByFile, trustInFile } from '../trusted-folders-file.js';
import { classifyRecord, normaliseForMatch, QwenTurnObserver } from './store.js';
import { geminiLeads } from '../gemini/message-guard.js';

/**
 * Qwen Code (`@qwen-code/qwen-code`, binary `qwen`; a fork of Gemini CLI), measured on 0.24.4
 * (docs/qwen.md; research: opencode-copilot-qwen-pi1.md).
 *
 * cal chooses the session id (`--session-id <uuid>`) and resumes it with `--resume <uuid>` in the
 * same working directory: Qwen keys sessions by it (`<runtime>/projects/<cwd slug>/chats/<id>.jsonl`,
 * home.ts). The first message of every TUI launch goes to `--prompt-interactive=<text>` (the TUI
 * submits it once ready); later ones are pasted. The answer and the end come only from the session
 * file (store.ts). Every stability field maps to a flag of the launch, so nothing is written into
 * the user's Qwen home: `--model`, `--append-system-prompt` (Qwen's own instructions stay),
 * `--mcp-config <file>` (cal's file converted to Qwen's server keys, in the session's folder) and
 * `--approval-mode`. Qwen has no trust or onboarding dialog; the "Auto mode" notice and update
 * check are answered only in the homes cal makes for its scripted model (home.ts).
 *
 * Structured transport: Qwen's own headless stream-json mode (headless.ts). `qwen --acp` exists,
 * but needs a long-lived process per session for what one process per turn does here.
 */
export const qwenVersions: SupportedVersions = { floor: '0.24.4', certified: '0.24.4' };

/** cal's tool policies as Qwen approval modes (0.24.4 `--approval-mode`); `default` keeps Qwen's own. */
const APPROVAL_MODES: Record<string, string | null> = {
  default: null,
  'read-only': 'plan',
  'accept-edits': 'auto-edit',
  bypass: 'yolo',
};

/** `--mcp-config F` as Qwen `mcpServers` entries (`url` is SSE, `httpUrl` streamable HTTP), each trusted. */
export function qwenMcpServers(file: string): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const [name, server] of Object.entries(readMcpServers(file, 'Qwen Code'))) {
    if ('command' in server) {
      out[name] = { command: server.command, args: server.args ?? [], ...(server.env ? { env: server.env } : {}), ...(server.cwd ? { cwd: server.cwd } : {}), trust: true };
    } else {
      out[name] = { [server.type === 'sse' ? 'url' : 'httpUrl']: server.url, ...(server.headers ? { headers: server.headers } : {}), trust: true };
    }
  }
  return out;
}

/** The flags every launch gets, TUI and headless alike (the MCP file is written into the session's folder). */
function sharedFlags(req: LaunchRequest): string[] {
  const { config } = req;
  const argv: string[] = [];
  if (config.model) argv.push(`--model=${config.model}`);
  const approval = APPROVAL_MODES[config.toolPolicy];
  if (approval) argv.push('--approval-mode', approval);
  if (config.systemPrompt !== null) argv.push(`--append-system-prompt=${config.systemPrompt}`);
  if (config.mcpConfigPath) {
    if (!req.sessionDir) throw new CalError('internal', 'a Qwen launch with an MCP config needs the session folder cal owns');
    ensurePlainDirSync(req.sessionDir, path.dirname(req.sessionDir));
    const file = path.join(req.sessionDir, 'qwen-mcp.json');
    writePlainFileSync(file, `${JSON.stringify({ mcpServers: qwenMcpServers(config.mcpConfigPath) }, null, 2)}\n`);
    argv.push(`--mcp-config=${file}`);
  }
  return argv;
}

function sessionIdOf(req: LaunchRequest): string {
  if (req.mode === 'resume') {
    if (!req.sessionId) throw new CalError('internal', 'qwen resume without a session id');
    return req.sessionId;
  }
  // A relaunch of a session that never bound keeps the id it chose first.
  return req.sessionId ?? randomUUID();
}

function idFlags(req: LaunchRequest, sessionId: string): string[] {
  return req.mode === 'resume' ? ['--resume', sessionId] : ['--session-id', sessionId];
}

/** The session file of an id, once it holds a human prompt with our message (null before). */
export async function findTranscript(env: Record<string, string>, cwd: string, sessionId: string, message: string | null): Promise<string | null> {
  const file = sessionFilePath(env, cwd, sessionId);
  const read = await readJsonlFrom(file, 0);
  if (read.missing) return null;
  if (message === null) return file;
  const needle = normaliseForMatch(message);
  const found = read.records.some((r) => {
    const rec = classifyRecord(r.value);
    return rec?.kind === 'user' && rec.human && rec.sessionId === sessionId && rec.text !== null && normaliseForMatch(rec.text).includes(needle);
  });
  return found ? file : null;
}

async function runStructured(req: StructuredRunRequest): Promise<StructuredTurnResult> {
  const sessionId = sessionIdOf(req);
  const argv = [req.cli.realPath, ...sharedFlags(req), ...idFlags(req, sessionId), '--output-format', 'stream-json', '--input-format', 'stream-json'];
  return runHeadlessTurn(req, sessionId, {
    argv,
    env: req.env,
    transcript: (id) => findTranscript(req.env, req.config.cwd, id, null),
  });
}

/**
 * As in Gemini CLI (Qwen Code is its fork): a leading '/' (after blanks and invisible
 * characters) runs a slash command however it is pasted, and a '!' toggles shell mode on an
 * empty prompt (after a space it is text).
 */
const qwenMessageGuard: MessageGuard = {
  passesOver: 'blanks-and-invisible',
  leads: geminiLeads,
  // Measured on 0.24.4: the messages `exit` and `:q` each ended Qwen Code (exit 12); `quit` and
  // the other vim words (Claude Code's list) are refused with them. It passes over invisible
  // characters, so no guard keeps them text.
  commandWords: { words: ['exit', 'quit', ':q', ':q!', ':wq', ':wq!'], means: '"exit", "quit", ":q", ":wq" end the session', action: 'refuse' },
  // As Gemini CLI (its fork), whose pane broke a 100 KB paste into two prompts.
  maxPasteBytes: 64 * 1024,
};

function qwenTrustedFolders(env: Record<string, string>): string {
  return env.QWEN_CODE_TRUSTED_FOLDERS_PATH || path.join(qwenDir(env), 'trustedFolders.json');
}

/** Whether the user switched Qwen's folder trust on (`security.folderTrust.enabled` in its settings). */
function qwenFolderTrustOn(env: Record<string, string>): boolean {
  try {
    const settings = JSON.parse(readFileSync(path.join(qwenDir(env), 'settings.json'), 'utf8')) as { security?: { folderTrust?: { enabled?: unknown } } };
    return settings.security?.folderTrust?.enabled === true;
  } catch {
    return false;
  }
}

export const qwenAdapter: CliAdapter = {
  name: 'qwen',
  executable: 'qwen',
  capabilities: {
    tmuxContinuation: true,
    nativeResumeInTmux: true,
    structuredTransport: true,
    apiOnly: false,
    needsStableWorkingDir: true,
  },
  toolPolicies: Object.keys(APPROVAL_MODES) as ToolPolicy[],
  envNames: ['HOME', 'QWEN_HOME', 'QWEN_RUNTIME_DIR', 'OPENAI_BASE_URL', 'OPENAI_API_KEY', 'OPENAI_MODEL'],
  versions: qwenVersions,
  // Like Gemini CLI (its origin), an Enter in the same burst as the paste is taken into the text.
  pasteSubmitDelayMs: 300,
  // Escape puts the interrupted prompt back in the input; one Ctrl+C empties it (a second one on
  // an empty input within a moment would exit, so it is pressed once, only after an interrupt).
  afterInterruptKeys: ['C-c'],
  // A model that keeps failing: at cal's third attempt (store.ts) Escape stops Qwen's own retries.
  afterFailKeys: ['Escape'],

  async resolveCli(cliPath: string | undefined, env: Record<string, string>): Promise<PinnedCli> {
    const found = findExecutable('qwen', cliPath, env);
    return pinSupported('Qwen Code', await pinCli(found, env), qwenVersions);
  },

  // Qwen's folder trust (Gemini's, inherited) is off unless `security.folderTrust.enabled` is set
  // in its settings (0.24.4: default false); then it keeps trustedFolders.json as Gemini does.
  folderTrust: {
    kind: 'asks',
    trusted: (env, cwd) => !qwenFolderTrustOn(env) || trustedByFile(qwenTrustedFolders(env), cwd),
    trust: async (env, cwd) => qwenFolderTrustOn(env) && trustInFile(qwenTrustedFolders(env), cwd),
    howToTrust: (cwd) => `run \`qwen\` in ${cwd} once and trust the folder (it writes ~/.qwen/trustedFolders.json)`,
  },

  async prepare(_env: Record<string, string>, config: SessionConfig): Promise<boolean> {
    if (!(config.toolPolicy in APPROVAL_MODES)) {
      throw new CalError('usage', `qwen: tool policy ${config.toolPolicy} has no Qwen approval mode (known: ${Object.keys(APPROVAL_MODES).join(', ')})`);
    }
    // Read now, so a bad file is a usage error before anything is sent, not a failure in a pane.
    if (config.mcpConfigPath) qwenMcpServers(config.mcpConfigPath);
    // Checks only: nothing is written that the CLI reads at its start.
    return false;
  },

  launch(req: LaunchRequest): LaunchPlan {
    const sessionId = sessionIdOf(req);
    // The `--opt=value` form keeps a message that starts with '-' from being read as a flag.
    const argv = [req.cli.realPath, ...sharedFlags(req), ...idFlags(req, sessionId), `--prompt-interactive=${req.message}`];
    return { argv, env: req.env, cwd: req.config.cwd, deliversMessage: true, sessionId };
  },

  async bindTranscript(req: BindRequest): Promise<TranscriptBinding | null> {
    if (!req.sessionId) return null;
    // Bound once the CLI recorded our message: that is when the id becomes resumable.
    const file = await findTranscript(req.env, req.config.cwd, req.sessionId, req.message);
    return file ? { path: file, sessionId: req.sessionId } : null;
  },

  observeTurn(message: string, notBefore?: Date) {
    return new QwenTurnObserver(message, notBefore);
  },

  /** Gemini CLI's input box (Qwen Code is its fork), and its ghost suggestions; one Ctrl-U empties it (docs/drafts.md). */
  draft: { read: readQwenInputBox, keys: ['End', 'C-u'] },
  messageGuard: qwenMessageGuard,

  structured: {
    run: (req) => runStructured(req),
    // `qwen -p` (0.24.4) runs a leading '/' as a slash command: "/clear" emptied the context,
    // "/about", "/status", "/model", "/memory" and "/init" ran; `@path` includes the file.
    messageGuard: slashCommandGuard('`qwen -p` runs a leading "/" as a slash command ("/clear" empties the context)', { '@': geminiLeads['@'] }),
  },

  // `qwen --acp` (0.24.4): the same flags as its other launches; the session id is Qwen's own.
  acp: {
    command: (req) => ({ argv: [req.cli.realPath, '--acp', ...sharedFlags(req)], env: req.env }),
    messageGuard: acpMessageGuard,
  },

  scriptedModelEnv(dir: string, modelUrl: string, env: Record<string, string>, opts?: ScriptedEnvOptions): Promise<Record<string, string>> {
    return scriptedQwenEnv(dir, modelUrl, env, opts);
  },
};
