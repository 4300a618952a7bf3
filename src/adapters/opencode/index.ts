import { CalError } from '../../errors.js';
import type { PinnedCli, ToolPolicy } from '../../handles/schema.js';
import { findExecutable, pinCli } from '../resolve.js';
import { pinSupported, type SupportedVersions } from '../versions.js';
import type { BindRequest, CliAdapter, LaunchPlan, LaunchRequest, ScriptedEnvOptions, SessionConfig, TranscriptBinding } from '../types.js';
import { OPENCODE_QUIET_ENV, scriptedOpencodeEnv } from './home.js';
import { readOpencodeInputBox } from './input-box.js';
import { mcpServerNames, opencodeMcpServers, sessionFlags, TOOL_POLICIES } from './launch.js';
import { createSession, isSessionId, mirrorPath, newSessionId, sessionIdFor, sessionRows, storeEnv, syncMirror } from './store.js';
import { opencodeStructured } from './structured.js';
import { normaliseForMatch, OpencodeTurnObserver, parseRow, userText } from './turn.js';

/**
 * OpenCode (`opencode-ai`, binary `opencode`, a Bun-compiled native binary), measured on 1.18.33
 * (docs/opencode.md; research: opencode-copilot-qwen-pi1.md).
 *
 * cal chooses the id of each new session (`ses_…`, OpenCode's own form) and makes it an empty
 * session with `opencode import` before the TUI starts with `--session <id>` (beforeLaunch), so
 * two sessions started at once in one folder each know their own; a resume is `--session <id>`
 * too. A TUI given `--session` ignores `--prompt`, so the message is pasted once its input box
 * shows. The answer and the end come from OpenCode's SQLite store, read through the CLI's own
 * binary into a JSONL mirror cal keeps (store.ts, bun-sqlite.ts, turn.ts), and a model OpenCode
 * keeps retrying from its own log (log.ts), never from the screen. The stability fields map to
 * flags and to `OPENCODE_CONFIG_CONTENT` (launch.ts), so nothing is written into the user's own
 * OpenCode config. OpenCode opens no dialog at start; the homes cal makes for its scripted model
 * turn off the update check and the model catalogue download (home.ts).
 *
 * Structured transport: `opencode run --format json` (structured.ts, docs/opencode.md says why).
 */
export const opencodeVersions: SupportedVersions = { floor: '1.18.33', certified: '1.18.33' };

function storeEnvOf(env: Record<string, string>): Record<string, string> {
  return storeEnv({ ...env, ...OPENCODE_QUIET_ENV });
}

/**
 * The mirror (store.ts) of the session cal chose the id of (`createSession`), once OpenCode has
 * recorded a user message holding `message` in it; null before. Bound by that id alone, so two
 * sessions started at once in one folder with the same message each bind their own.
 */
async function findSession(cli: PinnedCli, env: Record<string, string>, config: SessionConfig, sessionId: string, message: string): Promise<TranscriptBinding | null> {
  const quietEnv = storeEnvOf(env);
  const needle = normaliseForMatch(message);
  const rows = (await sessionRows(cli.realPath, quietEnv, sessionId)).flatMap((r) => {
    const parsed = parseRow(r);
    return parsed ? [parsed] : [];
  });
  const users = rows.filter((r) => r.message?.role === 'user').map((r) => r.row.id);
  const holds = users.some((id) => normaliseForMatch(userText(rows.filter((r) => r.part && r.row.messageId === id).map((r) => r.part!))).includes(needle));
  if (!holds) return null;
  const file = mirrorPath(quietEnv, sessionId);
  await syncMirror(file, { kind: 'opencode-mirror', sessionId, executable: cli.realPath, env: quietEnv, mcpServers: mcpServerNames(config) });
  return { path: file, sessionId };
}

export const opencodeAdapter: CliAdapter = {
  name: 'opencode',
  executable: 'opencode',
  capabilities: {
    tmuxContinuation: true,
    nativeResumeInTmux: true,
    structuredTransport: true,
    apiOnly: false,
    // Sessions belong to the project of the folder they were started in.
    needsStableWorkingDir: true,
  },
  toolPolicies: [...TOOL_POLICIES] as ToolPolicy[],
  envNames: ['HOME', 'XDG_DATA_HOME', 'XDG_CONFIG_HOME', 'OPENCODE_CONFIG', 'OPENCODE_CONFIG_CONTENT', 'OPENCODE_DB'],
  versions: opencodeVersions,

  async resolveCli(cliPath: string | undefined, env: Record<string, string>): Promise<PinnedCli> {
    const found = findExecutable('opencode', cliPath, env);
    return pinSupported('OpenCode', await pinCli(found, env), opencodeVersions);
  },

  async prepare(_env: Record<string, string>, config: SessionConfig): Promise<void> {
    if (!(TOOL_POLICIES as readonly string[]).includes(config.toolPolicy)) {
      throw new CalError('usage', `opencode: tool policy ${config.toolPolicy} has no OpenCode equivalent (known: ${TOOL_POLICIES.join(', ')})`);
    }
    // Read now, so a bad file is a usage error before anything is sent, not a failure in a pane.
    if (config.mcpConfigPath) opencodeMcpServers(config.mcpConfigPath);
  },

  launch(req: LaunchRequest): LaunchPlan {
    const flags = sessionFlags(req);
    if (req.mode === 'resume') {
      if (!req.sessionId) throw new CalError('internal', 'opencode resume without a session id');
      // A resumed TUI ignores `--prompt` (measured on 1.18.33: the box stays empty), so the
      // engine pastes the message once the TUI drew its empty input box.
      return { argv: [req.cli.realPath, ...flags.argv, '--session', req.sessionId], env: flags.env, cwd: req.config.cwd, deliversMessage: false, sessionId: req.sessionId };
    }
    // A fresh TUI gets an id cal chose, of an empty session made just before (beforeLaunch):
    // OpenCode would name its own, and two sessions started at once in one folder with the same
    // message could not be told apart in its store. Like a resumed one, it ignores `--prompt`.
    const sessionId = newSessionId();
    return { argv: [req.cli.realPath, ...flags.argv, '--session', sessionId], env: flags.env, cwd: req.config.cwd, deliversMessage: false, sessionId };
  },

  async beforeLaunch(req: LaunchRequest, plan: LaunchPlan): Promise<void> {
    if (req.mode !== 'fresh' || !plan.sessionId) return;
    await createSession(req.cli, storeEnvOf(plan.env), plan.cwd, plan.sessionId);
  },

  async bindTranscript(req: BindRequest): Promise<TranscriptBinding | null> {
    if (!req.cli) throw new CalError('internal', 'binding an OpenCode session needs the pinned CLI (its store is read through it)');
    // Only a session whose id cal chose is bound (nothing else tells two sessions started at once
    // apart): the TUI's, or the one derived from the handle's own id (structured.ts).
    if (!req.sessionId) return null;
    return findSession(req.cli, req.env, req.config, isSessionId(req.sessionId) ? req.sessionId : sessionIdFor(req.sessionId), req.message);
  },

  refreshTranscript(transcriptPath: string): Promise<void> {
    return syncMirror(transcriptPath);
  },

  observeTurn(message: string, notBefore?: Date) {
    return new OpencodeTurnObserver(message, notBefore);
  },

  draft: { read: readOpencodeInputBox, keys: ['C-e', 'C-u'] },
  // One Escape only arms the interrupt ("again to interrupt"); a second within 5 s aborts the
  // session's run (its bundle: the interrupt count reset after 5000 ms, abort at 2).
  interruptKeys: ['Escape', 'Escape'],
  // A turn failed on a model OpenCode still retries (turn.ts): its interrupt stops the retries.
  afterFailKeys: ['Escape', 'Escape'],
  pasteText(message: string): string {
    return message;
  },

  structured: opencodeStructured,

  scriptedModelEnv(dir: string, modelUrl: string, env: Record<string, string>, opts?: ScriptedEnvOptions): Promise<Record<string, string>> {
    return scriptedOpencodeEnv(dir, modelUrl, env, opts?.keepHome ?? false);
  },
};
