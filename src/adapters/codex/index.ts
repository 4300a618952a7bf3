import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { CalError } from '../../errors.js';
import type { PinnedCli } from '../../handles/schema.js';
import { findExecutable, pinCli } from '../resolve.js';
import type { BindRequest, CliAdapter, LaunchPlan, LaunchRequest, PromptMatch, SessionConfig, TranscriptBinding } from '../types.js';
import { TEXT, type MessageGuard } from '../message-guard.js';
import { compareVersions, pinSupported, type SupportedVersions } from '../versions.js';
import { codexEnv, nativeCodexBinary, wrapperEnv } from './binary.js';
import { codexTrusts, commonOverrides, codexToolPolicies } from './config.js';
import { codexStructured } from './exec.js';
import { scriptedCodexEnv } from './home.js';
import { CodexTurnObserver } from './rollout.js';
import { codexHome, findRolloutsForFirstMessage, pickRollout, scanLaunches } from './sessions.js';
import { lastMarkedRow } from '../input-box.js';

/**
 * OpenAI Codex CLI (measured on 0.169.0, and 0.100.0 … 0.171.0 for the version matrix;
 * research: codex-cli.md).
 *
 * tmux transport: `codex --no-daemon` where the flag exists (the shared app-server daemon
 * survives a tmux kill, finishes turns behind cal's back and keeps a stale environment); trust,
 * update checks and the resume working-directory prompt are pre-answered with `-c` overrides, so
 * the user's config.toml is never written. The first message of a launch goes in argv (the TUI
 * submits it once it is ready, also after `resume <id>`). Completion comes only from the rollout.
 *
 * No second end-of-turn signal: every supported release writes `task_complete` (with the turn's
 * id, for success and failure alike) to the rollout. Codex's one hook, the `notify` program, adds
 * nothing: it fires only after a successful turn (never a failed one), also for the title
 * thread, and `-c notify=[…]` would replace the user's own notify program (docs/certify.md).
 */

/**
 * Codex cannot be told which thread id to create, and writes no rollout before the first message.
 * cal's pending id travels in the pane's environment under this name, so that when two launches
 * send the same first message in the same folder at the same time, the rollout held open by the
 * process carrying our tag is ours.
 */
export const LAUNCH_TAG_ENV = 'CAL_CODEX_LAUNCH';

/**
 * Measured with the real binaries (docs/certify.md, "Version matrix"). The floor is the first
 * release whose rollout says where a turn starts and ends: 0.100.0 writes `task_started` and
 * `task_complete` with a `turn_id`; 0.99.0 and older (0.40.0, 0.80.0, 0.94.0 … 0.99.0 measured)
 * write neither, nor any turn id, so no record of theirs ends a turn.
 */
export const codexVersions: SupportedVersions = { floor: '0.100.0', certified: '0.171.0' };

/**
 * The first release with `--no-daemon` (0.156.0; the shared daemon starts by default from
 * 0.157.0). Older releases have no daemon and refuse the flag ("unexpected argument").
 */
export const NO_DAEMON_SINCE = '0.156.0';

/** The TUI's argv head for a pinned release: the native binary, and `--no-daemon` where it exists. */
export function tuiHead(cli: { realPath: string; version: string }): string[] {
  return compareVersions(cli.version, NO_DAEMON_SINCE) >= 0 ? [cli.realPath, '--no-daemon'] : [cli.realPath];
}

/**
 * A leading '/' opens a slash command and '!' runs a shell command in the TUI: a space keeps a
 * first one text. Behind leading blanks Codex still reads them (measured on 0.169.0: a pasted
 * '\n/*exit' was "Unrecognized command"); a zero-width space, which Codex neither trims nor
 * skips, keeps them text.
 */
const codexMessageGuard: MessageGuard = {
  passesOver: 'blanks',
  leads: {
    '/': { means: 'a leading "/" runs a slash command', readAt: 'visible', action: 'space' },
    '!': { means: 'a leading "!" runs a shell command', readAt: 'visible', action: 'space' },
    '@': TEXT,
    '#': TEXT,
    '?': TEXT,
    '&': TEXT,
    '-': TEXT,
    '$': TEXT,
  },
};

/** The user's Codex config.toml as text, or null when there is none. */
function readCodexConfig(env: Record<string, string>): string | null {
  try {
    return readFileSync(path.join(codexHome(env), 'config.toml'), 'utf8');
  } catch {
    return null;
  }
}

export const codexAdapter: CliAdapter = {
  name: 'codex',
  executable: 'codex',
  capabilities: {
    tmuxContinuation: true,
    nativeResumeInTmux: true,
    structuredTransport: true,
    apiOnly: false,
    // Codex finds a session by id from any folder; cal still relaunches in the original one.
    needsStableWorkingDir: false,
  },
  toolPolicies: codexToolPolicies,
  envNames: ['HOME', 'CODEX_HOME', 'OPENAI_API_KEY', 'CODEX_API_KEY'],
  versions: codexVersions,

  async resolveCli(cliPath: string | undefined, env: Record<string, string>): Promise<PinnedCli> {
    const found = findExecutable('codex', cliPath, env);
    const native = nativeCodexBinary(found);
    return pinSupported('Codex', await pinCli({ path: found.path, realPath: native }, { ...env, ...wrapperEnv(native) }), codexVersions);
  },

  // The TUI asks "Trust this folder?" inside a git repository its config does not trust; `codex
  // exec` never asks (it loads the folder's own config only when trusted). cal's trust is the
  // `projects` override on the command line (config.ts), so nothing is written.
  folderTrust: {
    kind: 'asks',
    trusted: (env, cwd, transport) => transport === 'structured' || codexTrusts(readCodexConfig(env), cwd),
    trust: async () => false,
    howToTrust: (cwd) => `run \`codex\` in ${cwd} once and answer "Trust and continue" (or add [projects."<its git root>"] trust_level = "trusted" to Codex's config.toml)`,
  },

  async prepare(env: Record<string, string>, _config: SessionConfig): Promise<boolean> {
    // Everything is pre-answered on the command line; only a missing CODEX_HOME is worth a clear word.
    if (env.CODEX_HOME && !existsSync(env.CODEX_HOME)) {
      throw new CalError('usage', `CODEX_HOME=${env.CODEX_HOME} does not exist: create it (Codex keeps its config and sessions there) or unset it`);
    }
    // Checks only: nothing is written that the CLI reads at its start.
    return false;
  },

  launch(req: LaunchRequest): LaunchPlan {
    const overrides = [...commonOverrides(req.config), '-c', 'tui.resume_cwd="session"'];
    const argv = [...tuiHead(req.cli), ...overrides];
    if (req.mode === 'resume') {
      if (!req.sessionId) throw new CalError('internal', 'codex resume without a session id');
      // Given again to the subcommand: releases before 0.16x do not hand the top-level overrides
      // to `resume` (measured on 0.120.0: the resumed TUI asked to trust the folder).
      argv.push('resume', req.sessionId, ...overrides);
    }
    // `--` keeps a message that starts with '-' from being read as a flag.
    argv.push('--', req.message);
    const env: Record<string, string> = codexEnv(req.env, req.cli.realPath);
    if (req.mode === 'fresh' && req.sessionId) env[LAUNCH_TAG_ENV] = req.sessionId;
    else delete env[LAUNCH_TAG_ENV];
    return {
      argv,
      env,
      cwd: req.config.cwd,
      deliversMessage: true,
      // Not Codex's id (it picks its own): the launch tag, handed back to bindTranscript.
      sessionId: req.mode === 'fresh' ? req.sessionId : null,
    };
  },

  async bindTranscript(req: BindRequest): Promise<TranscriptBinding | null> {
    const found = await findRolloutsForFirstMessage(codexHome(req.env), req.config.cwd, req.message, req.sentAt);
    if (found.length === 0) return null;
    const { pick, ambiguous } = pickRollout(found, await scanLaunches(LAUNCH_TAG_ENV), req.sessionId);
    if (ambiguous) {
      throw new CalError(
        'non_continuable',
        `${found.length} Codex sessions began with this same message in ${req.config.cwd} at the same time and cal cannot tell which one is its own: ${found.map((f) => f.sessionId).join(', ')}`,
      );
    }
    return pick;
  },

  observeTurn(message: string, notBefore?: Date, match?: PromptMatch) {
    return new CodexTurnObserver(message, notBefore, match);
  },

  /** The input is the last row opening with `›`, its placeholder dim; one Ctrl-U empties it (docs/drafts.md). */
  draft: { read: lastMarkedRow(/^› /), keys: ['End', 'C-u'] },
  messageGuard: codexMessageGuard,

  structured: codexStructured,

  scriptedModelEnv(dir: string, modelUrl: string, env: Record<string, string>): Promise<Record<string, string>> {
    return scriptedCodexEnv(dir, modelUrl, env);
  },
};
