import { CalError } from '../../errors.js';
import type { PinnedCli, ToolPolicy } from '../../handles/schema.js';
import type { BindRequest, LaunchPlan, PaneCliAdapter, LaunchRequest, ScriptedEnvOptions, SessionConfig, TranscriptBinding } from '../types.js';
import { mirrorKind, userEnvNames, type OpencodeFlavour } from './flavour.js';
import { scriptedEnv } from './home.js';
import { checkToolPolicy, mcpServerNames, opencodeMcpServers, sessionFlags, TOOL_POLICIES } from './launch.js';
import { createSession, isSessionId, mirrorPath, newSessionId, sessionIdFor, sessionRows, storeEnv, syncMirror } from './store.js';
import { acpOf, structuredOf } from './structured.js';
import { normaliseForMatch, OpencodeTurnObserver, parseRow, userText } from './turn.js';

/**
 * The parts of the OpenCode adapter that a CLI keeping OpenCode's store, flags and quirks shares
 * with it, given its names and paths (flavour.ts): OpenCode itself (index.ts) and Kilo Code CLI
 * (src/adapters/kilo/). Each adapter adds what is its own: name, versions, how its binary is
 * found, its TUI's guard, input box and keys.
 *
 * cal chooses the id of each new session (`ses_…`, OpenCode's own form) and makes it an empty
 * session with `<command> import` before the TUI starts with `--session <id>` (beforeLaunch), so
 * two sessions started at once in one folder each know their own; a resume is `--session <id>`
 * too. A TUI given `--session` ignores `--prompt`, so the message is pasted once its input box
 * shows. The answer and the end come from the SQLite store, read through the CLI's own binary
 * into a JSONL mirror cal keeps (store.ts, bun-sqlite.ts, turn.ts), and a model the CLI keeps
 * retrying from its own log (log.ts), never from the screen. The stability fields map to flags
 * and to `<PREFIX>_CONFIG_CONTENT` (launch.ts), so nothing is written into the user's own config.
 */
export type OpencodeFamilyParts = Pick<
  PaneCliAdapter,
  'capabilities' | 'toolPolicies' | 'envNames' | 'prepare' | 'launch' | 'beforeLaunch' | 'bindTranscript' | 'refreshTranscript' | 'observeTurn' | 'structured' | 'acp' | 'scriptedModelEnv'
>;

export function opencodeFamily(flavour: OpencodeFlavour): OpencodeFamilyParts {
  const storeEnvOf = (env: Record<string, string>) => storeEnv(flavour, { ...env, ...flavour.quietEnv });

  /**
   * The mirror (store.ts) of the session cal chose the id of (`createSession`), once the CLI has
   * recorded a user message holding `message` in it; null before. Bound by that id alone, so two
   * sessions started at once in one folder with the same message each bind their own.
   */
  async function findSession(cli: PinnedCli, env: Record<string, string>, config: SessionConfig, sessionId: string, message: string): Promise<TranscriptBinding | null> {
    const quietEnv = storeEnvOf(env);
    const needle = normaliseForMatch(message);
    const rows = (await sessionRows(flavour, cli, quietEnv, sessionId)).flatMap((r) => {
      const parsed = parseRow(r);
      return parsed ? [parsed] : [];
    });
    const users = rows.filter((r) => r.message?.role === 'user').map((r) => r.row.id);
    const holds = users.some((id) => normaliseForMatch(userText(rows.filter((r) => r.part && r.row.messageId === id).map((r) => r.part!))).includes(needle));
    if (!holds) return null;
    const file = mirrorPath(flavour, quietEnv, sessionId);
    await syncMirror(flavour, file, cli, { kind: mirrorKind(flavour), sessionId, executable: cli.realPath, env: quietEnv, mcpServers: mcpServerNames(flavour, config) });
    return { path: file, sessionId };
  }

  return {
    capabilities: {
      tmuxContinuation: true,
      nativeResumeInTmux: true,
      structuredTransport: true,
      apiOnly: false,
      // Sessions belong to the project of the folder they were started in.
      needsStableWorkingDir: true,
    },
    toolPolicies: [...TOOL_POLICIES] as ToolPolicy[],
    envNames: userEnvNames(flavour),

    async prepare(_env: Record<string, string>, config: SessionConfig): Promise<boolean> {
      checkToolPolicy(flavour, config.toolPolicy);
      // Read now, so a bad file is a usage error before anything is sent, not a failure in a pane.
      if (config.mcpConfigPath) opencodeMcpServers(config.mcpConfigPath, flavour.label);
      // Checks only: nothing is written that the CLI reads at its start.
      return false;
    },

    launch(req: LaunchRequest): LaunchPlan {
      const flags = sessionFlags(flavour, req);
      if (req.mode === 'resume') {
        if (!req.sessionId) throw new CalError('internal', `${flavour.command} resume without a session id`);
        // A resumed TUI ignores `--prompt` (measured on OpenCode 1.18.33 and Kilo 7.7.7: the box
        // stays empty), so the engine pastes the message once the TUI drew its empty input box.
        return { argv: [req.cli.realPath, ...flags.argv, '--session', req.sessionId], env: flags.env, cwd: req.config.cwd, deliversMessage: false, sessionId: req.sessionId };
      }
      // A fresh TUI gets an id cal chose, of an empty session made just before (beforeLaunch):
      // the CLI would name its own, and two sessions started at once in one folder with the same
      // message could not be told apart in its store. Like a resumed one, it ignores `--prompt`.
      const sessionId = newSessionId();
      return { argv: [req.cli.realPath, ...flags.argv, '--session', sessionId], env: flags.env, cwd: req.config.cwd, deliversMessage: false, sessionId };
    },

    async beforeLaunch(req: LaunchRequest, plan: LaunchPlan): Promise<void> {
      if (req.mode !== 'fresh' || !plan.sessionId) return;
      await createSession(flavour, req.cli, storeEnvOf(plan.env), plan.cwd, plan.sessionId);
    },

    async bindTranscript(req: BindRequest): Promise<TranscriptBinding | null> {
      if (!req.cli) throw new CalError('internal', `binding a session of ${flavour.label} needs the pinned CLI (its store is read through it)`);
      // Only a session whose id cal chose is bound (nothing else tells two sessions started at
      // once apart): the TUI's, or the one derived from the handle's own id (structured.ts).
      if (!req.sessionId) return null;
      return findSession(req.cli, req.env, req.config, isSessionId(req.sessionId) ? req.sessionId : sessionIdFor(req.sessionId), req.message);
    },

    refreshTranscript(transcriptPath: string, cli: PinnedCli | null): Promise<void> {
      if (!cli) throw new CalError('internal', `refreshing a mirror of ${flavour.label} needs the pinned CLI (its store is read through it)`);
      return syncMirror(flavour, transcriptPath, cli);
    },

    observeTurn(message: string, notBefore?: Date) {
      return new OpencodeTurnObserver(message, notBefore);
    },

    structured: structuredOf(flavour),
    acp: acpOf(flavour),

    scriptedModelEnv(dir: string, modelUrl: string, env: Record<string, string>, opts?: ScriptedEnvOptions): Promise<Record<string, string>> {
      return scriptedEnv(flavour, dir, modelUrl, env, opts?.keepHome ?? false);
    },
  };
}
