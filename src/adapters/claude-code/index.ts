import { randomUUID } from '../../util/random.js';
import path from 'node:path';
import type { PinnedCli } from '../../handles/schema.js';
import { findExecutable, pinCli } from '../resolve.js';
import { pinSupported, type SupportedVersions } from '../versions.js';
import type { BindRequest, CliAdapter, LaunchPlan, LaunchRequest, PromptMatch, ScriptedEnvOptions, SessionConfig, TranscriptBinding } from '../types.js';
import { TEXT, type MessageGuard } from '../message-guard.js';
import { createManagedHome, isFolderTrusted, preAnswerDialogs, trustDialogKeys } from './home.js';
import { claudeEnv, launchEnv, sessionFlags, transcriptCandidates, claudeToolPolicies } from './launch.js';
import { blockedPrompt, classifyRecord, normaliseForMatch, userText } from './records.js';
import { writeHookSettings } from './signals.js';
import { claudeStructured } from './structured.js';
import { ClaudeTurnObserver } from './transcript.js';
import { readJsonlFrom } from '../../transcripts/jsonl-tail.js';
import { betweenRules } from '../input-box.js';

export { projectSlug } from './launch.js';

/**
 * Measured with the real binaries (docs/certify.md, "Version matrix"): the oldest release that
 * passes start → paste → kill-tmux → native resume → recall with the Stop hook, and the newest
 * certified.
 */
export const claudeCodeVersions: SupportedVersions = { floor: '2.0.12', certified: '2.1.332' };

/**
 * The input box trims leading blanks and strips zero-width, format and default-ignorable
 * characters (soft hyphen, U+034F, U+180E, …), then runs a leading '/' as a slash command
 * (measured on 2.1.328: ' /exit' and '\u2060/exit' both ended the session): no guard keeps it
 * text. A '!' opens bash mode and '#' a memory note only when typed first; a space keeps a
 * pasted one text (measured: ' !touch x' reached the model as text).
 */
const claudeMessageGuard: MessageGuard = {
  passesOver: 'blanks-and-invisible',
  leads: {
    '/': { means: 'a leading "/" runs a slash command (" /exit" ends the session)', readAt: 'visible', action: 'refuse' },
    '!': { means: 'a first "!" opens bash mode', readAt: 'start', action: 'space' },
    '#': { means: 'a first "#" writes a memory note', readAt: 'start', action: 'space' },
    // A file mention: the user's to use, as typed at the prompt.
    '@': { means: 'a leading "@path" attaches that file', readAt: 'visible', action: 'keep' },
    '?': TEXT,
    '&': TEXT,
    '-': TEXT,
    '$': TEXT,
  },
  // Its submit handler ends the session on these, trimmed and lower-cased (its bundle's list;
  // measured: `exit` ended the pane, exit 12). It strips invisible characters, so none guards them.
  commandWords: { words: ['exit', 'quit', ':q', ':q!', ':wq', ':wq!'], means: '"exit", "quit", ":q", ":wq" end the session', action: 'refuse' },
};

export const claudeCodeAdapter: CliAdapter = {
  name: 'claude-code',
  executable: 'claude',
  capabilities: {
    tmuxContinuation: true,
    nativeResumeInTmux: true,
    structuredTransport: true,
    apiOnly: false,
    needsStableWorkingDir: true,
  },
  toolPolicies: claudeToolPolicies,
  envNames: ['HOME', 'ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN'],
  versions: claudeCodeVersions,

  async resolveCli(cliPath: string | undefined, env: Record<string, string>): Promise<PinnedCli> {
    const found = findExecutable('claude', cliPath, env);
    return pinSupported('Claude Code', await pinCli(found, { ...env, ...claudeEnv }), claudeCodeVersions);
  },

  // The TUI asks "Do you trust the files in this folder?" until ~/.claude.json trusts the folder
  // or an ancestor; `claude -p` never asks (research claude-code.md §2, §"-p").
  folderTrust: {
    kind: 'asks',
    trusted: (env, cwd, transport) => transport === 'structured' || isFolderTrusted(env, cwd),
    trust: (env, cwd) => preAnswerDialogs(env, cwd, { trust: true, managed: false }),
    howToTrust: (cwd) => `run \`claude\` in ${cwd} once and answer "Yes, I trust this folder"`,
  },

  async prepare(env: Record<string, string>, config: SessionConfig): Promise<boolean> {
    return preAnswerDialogs(env, config.cwd, { trust: false, managed: true });
  },

  launch(req: LaunchRequest): LaunchPlan {
    const sessionId = req.sessionId ?? randomUUID();
    const argv = [req.cli.realPath];
    argv.push(req.mode === 'fresh' ? '--session-id' : '--resume', sessionId);
    argv.push(...sessionFlags(req.config));
    // The second end-of-turn signal: a Stop hook in a settings file of this handle's own, merged
    // by the CLI with the user's settings (signals.ts).
    let signalFile: string | null = null;
    if (req.sessionDir) {
      const hooks = writeHookSettings(req.sessionDir, req.cli.version);
      argv.push('--settings', hooks.settingsFile);
      signalFile = hooks.signalFile;
    }
    // The first message of a launch goes in argv: the TUI submits it exactly once it is ready
    // (measured more reliable than pasting into a pane that is still starting). `--` keeps a
    // message that starts with '-' from being read as a flag, and ends variadic --mcp-config.
    argv.push('--', req.message);
    return {
      argv,
      env: launchEnv(req.env, req.config),
      cwd: req.config.cwd,
      deliversMessage: true,
      sessionId,
      signalFile,
    };
  },

  async bindTranscript(req: BindRequest): Promise<TranscriptBinding | null> {
    if (!req.sessionId) return null;
    const candidates = await transcriptCandidates(req.env, req.config.cwd, req.sessionId);
    const needle = normaliseForMatch(req.message);
    for (const file of candidates) {
      const read = await readJsonlFrom(file, 0);
      if (read.missing) continue;
      // Bound only once the CLI recorded our message: that is when the id becomes resumable. A
      // prompt a UserPromptSubmit hook blocked is recorded only as the hook's notice, which
      // still binds (the turn then settles as failed).
      const recorded = read.records.some((r) => {
        const rec = classifyRecord(r.value);
        if (rec.kind === 'system') {
          const blocked = blockedPrompt(rec.record);
          return blocked !== null && normaliseForMatch(blocked.prompt).includes(needle);
        }
        if (rec.kind !== 'user') return false;
        const text = userText(rec.record);
        return text !== null && normaliseForMatch(text).includes(needle);
      });
      if (recorded) return { path: file, sessionId: req.sessionId };
    }
    return null;
  },

  observeTurn(message: string, notBefore?: Date, match?: PromptMatch) {
    return new ClaudeTurnObserver(message, notBefore, match);
  },

  structured: claudeStructured,

  async scriptedModelEnv(dir: string, modelUrl: string, env: Record<string, string>, opts: ScriptedEnvOptions = {}): Promise<Record<string, string>> {
    const out: Record<string, string> = { ...env, ANTHROPIC_BASE_URL: modelUrl, ANTHROPIC_AUTH_TOKEN: 'cal-scripted-model', CLAUDE_CODE_MAX_RETRIES: '0', DISABLE_AUTOUPDATER: '1' };
    // A real key in the user's environment must never reach the scripted model.
    delete out.ANTHROPIC_API_KEY;
    if (opts.keepHome) {
      // Claude Code reads .claude.json and its settings from CLAUDE_CONFIG_DIR when it is set.
      const configDir = path.join(dir, 'claude-config');
      await createManagedHome(configDir);
      out.CLAUDE_CONFIG_DIR = configDir;
      return out;
    }
    const home = path.join(dir, 'home');
    await createManagedHome(home);
    out.HOME = home;
    delete out.CLAUDE_CONFIG_DIR;
    return out;
  },

  // Claude Code writes the user record the moment a prompt is submitted (measured on 2.1.328: a
  // turn is "running" seconds before a delayed reply), so a message unrecorded after this long
  // sits in a dialog (theme picker, an auto-mode notice), not in a slow turn.
  promptRecordedWithinMs: 20_000,

  // prepare trusts the folder in ~/.claude.json, but a Claude Code starting meanwhile in the same
  // HOME can rewrite that file without the entry before this pane's CLI reads it (16 starts at
  // once): the pane then shows the trust dialog, which gets the answer cal already gave.
  preAnsweredDialogKeys: trustDialogKeys,

  /**
   * The input box sits between two rules, its row opening with `❯` (`>` before 2.1); Ctrl-U
   * deletes the wrapped row the cursor is on, so it is pressed once a row (docs/drafts.md).
   */
  draft: { read: betweenRules(/^[>❯] /), keys: ['End', 'C-u'] },
  messageGuard: claudeMessageGuard,
};
