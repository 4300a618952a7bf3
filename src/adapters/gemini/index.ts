import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { CalError } from '../../errors.js';
import type { PinnedCli } from '../../handles/schema.js';
import { readJsonlFrom } from '../../transcripts/jsonl-tail.js';
import { findExecutable, pinCli } from '../resolve.js';
import { pinSupported, type SupportedVersions } from '../versions.js';
import type { BindRequest, CliAdapter, LaunchPlan, LaunchRequest, SessionConfig, TranscriptBinding } from '../types.js';
import { SESSION_HEADER, checkRetentionOff, geminiDir, isManagedGeminiHome, scriptedGeminiEnv } from './home.js';
import { GeminiTurnObserver, classifyRecord, contentText, normaliseForMatch } from './transcript.js';

/**
 * Google Gemini CLI (measured on 0.61.0; research: gemini-pi-cli.md G1–G5).
 *
 * tmux transport. cal chooses the session id (`--session-id <uuid>`), resumes it with
 * `--resume <uuid>` in the same working directory (Gemini keys sessions by the exact cwd), and
 * hands the first message of every launch to `-i` (the TUI submits it once it is ready, new
 * and resumed alike). Folder trust is pre-answered by `GEMINI_CLI_TRUST_WORKSPACE=true`, which
 * writes nothing. Completion comes only from the session file (see transcript.ts). A pasted
 * message gets its Enter 300 ms after the paste (`pasteSubmitDelayMs`): an Enter in the same
 * burst is dropped by the TUI, and the engine's re-press after 3 s would make every paste slow.
 *
 * What cal needs from the user's Gemini settings, and never writes itself: session retention
 * off (`general.sessionRetention.enabled: false`, see home.ts; refused with a usage error
 * otherwise) and working auth. `--mcp-config` and `--system-prompt` are refused: Gemini reads
 * MCP servers only from settings files (its system settings file is honoured only when every
 * folder on its path is owned by root and not group/world-writable), and GEMINI_SYSTEM_MD
 * replaces the whole built-in prompt instead of adding to it.
 *
 * Not yet in the adapter registry: `cal certify` does not pass. Gemini 0.61.0's TUI retries a
 * persistent HTTP 5xx forever and records nothing until Escape (CertFailedTurnSettles), the
 * MCP certifications need --mcp-config.
 */

/**
 * Gemini's own environment additions: trust the folder it is started in (writes nothing), and
 * never relaunch itself in a child process. Measured on 0.61.0: a relaunched Gemini (the default)
 * survives its tmux pane being killed, parent and child alike, and goes on holding the session;
 * with GEMINI_CLI_NO_RELAUNCH=true it ends with its pane, as a lost terminal must.
 */
const geminiEnv = {
  GEMINI_CLI_TRUST_WORKSPACE: 'true',
  GEMINI_CLI_NO_RELAUNCH: 'true',
} as const;

/**
 * Only the pinned release has been measured (the adapter is not registered yet): it is both the
 * floor and the newest certified.
 */
export const geminiVersions: SupportedVersions = { floor: '0.61.0', certified: '0.61.0' };

/** cal's tool policies as Gemini approval modes. */
const APPROVAL_MODES: Record<string, string | null> = {
  default: null,
  acceptEdits: 'auto_edit',
  plan: 'plan',
  bypassPermissions: 'yolo',
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

export const geminiAdapter: CliAdapter = {
  name: 'gemini',
  executable: 'gemini',
  capabilities: {
    tmuxContinuation: true,
    nativeResumeInTmux: true,
    structuredTransport: false,
    apiOnly: false,
    needsStableWorkingDir: true,
  },
  envNames: ['HOME', 'GEMINI_CLI_HOME', 'GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GOOGLE_GEMINI_BASE_URL'],
  versions: geminiVersions,
  pasteSubmitDelayMs: 300,

  async resolveCli(cliPath: string | undefined, env: Record<string, string>): Promise<PinnedCli> {
    const found = findExecutable('gemini', cliPath, env);
    return pinSupported('Gemini CLI', await pinCli(found, { ...env, ...geminiEnv }), geminiVersions);
  },

  async prepare(env: Record<string, string>, config: SessionConfig): Promise<void> {
    // Gemini CLI takes no MCP config file and no added system prompt on its command line: its
    // MCP servers live in settings.json (cal does not write the user's) and GEMINI_SYSTEM_MD
    // replaces the whole built-in prompt. Refused rather than silently dropped.
    if (config.mcpConfigPath) {
      throw new CalError('usage', 'gemini: --mcp-config is not supported (Gemini CLI reads MCP servers only from its settings.json: add them there)');
    }
    if (config.systemPrompt) {
      throw new CalError('usage', 'gemini: --system-prompt is not supported (Gemini CLI can only replace its whole system prompt, via GEMINI_SYSTEM_MD)');
    }
    if (!(config.toolPolicy in APPROVAL_MODES)) {
      throw new CalError('usage', `gemini: tool policy ${config.toolPolicy} has no Gemini approval mode (known: ${Object.keys(APPROVAL_MODES).join(', ')})`);
    }
    checkRetentionOff(env);
  },

  launch(req: LaunchRequest): LaunchPlan {
    const argv = [req.cli.realPath];
    if (req.config.model) argv.push('--model', req.config.model);
    const approval = APPROVAL_MODES[req.config.toolPolicy];
    if (approval) argv.push('--approval-mode', approval);
    let sessionId: string;
    if (req.mode === 'resume') {
      if (!req.sessionId) throw new CalError('internal', 'gemini resume without a session id');
      sessionId = req.sessionId;
      argv.push('--resume', sessionId);
    } else {
      sessionId = req.sessionId ?? randomUUID();
      argv.push('--session-id', sessionId);
    }
    // The `--opt=value` form keeps a message that starts with '-' from being read as a flag.
    argv.push(`--prompt-interactive=${req.message}`);
    const env: Record<string, string> = { ...req.env, ...geminiEnv };
    if (isManagedGeminiHome(req.env)) {
      // Only against cal's scripted model: Gemini sends no session id of its own with API-key
      // auth, so each request names its session in a header the model's log keys requests by.
      const own = (env.GEMINI_CLI_CUSTOM_HEADERS ?? '').trim();
      env.GEMINI_CLI_CUSTOM_HEADERS = `${own ? `${own}, ` : ''}${SESSION_HEADER}: ${sessionId}`;
    }
    return { argv, env, cwd: req.config.cwd, deliversMessage: true, sessionId };
  },

  async bindTranscript(req: BindRequest): Promise<TranscriptBinding | null> {
    if (!req.sessionId) return null;
    // Bound only once the CLI recorded our message: that is when the id becomes resumable.
    const file = await findTranscript(geminiDir(req.env), req.sessionId, req.message, null);
    return file ? { path: file, sessionId: req.sessionId } : null;
  },

  observeTurn(message: string, notBefore?: Date) {
    return new GeminiTurnObserver(message, notBefore);
  },

  pasteText(message: string): string {
    // A leading '!' (shell mode) is a key press on an empty prompt: after a space it is text
    // (measured on 0.61.0, pasted and through -i alike).
    return /^!/.test(message) ? ` ${message}` : message;
  },

  refuseMessage(message: string): string | null {
    // Gemini trims the input, then runs a leading '/' (but not '//' or '/*') as a slash command
    // (measured on 0.61.0: ' /about' ran /about). A space does not keep it text, and cal does
    // not slip an invisible character into the user's words, so such a message is refused.
    return /^\s*\/(?![/*])/.test(message) ? 'Gemini CLI runs a message that starts with "/" as a slash command; put text before the "/"' : null;
  },

  scriptedModelEnv(dir: string, modelUrl: string, env: Record<string, string>): Promise<Record<string, string>> {
    return scriptedGeminiEnv(dir, modelUrl, env);
  },
};
