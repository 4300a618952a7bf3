import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { claudeCodeAdapter } from '../../src/adapters/claude-code/index.js';
import { copilotAdapter } from '../../src/adapters/copilot/index.js';
import { geminiAdapter } from '../../src/adapters/gemini/index.js';
import { kiloAdapter } from '../../src/adapters/kilo/index.js';
import { opencodeAdapter } from '../../src/adapters/opencode/index.js';
import { clineAdapter } from '../../src/adapters/cline/index.js';
import { qwenAdapter } from '../../src/adapters/qwen/index.js';
import { tmuxSocketFor } from '../../src/engine/tmux-socket.js';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { baseEnv, killStateTmux, runCal, scratchDir, type CalRun } from './cal.js';
import { calBin, cliBin, copilotPackageCache, pinnedCli, pinnedCliOf, type PinnedCliName } from './clis.js';
import { codexTestEnv } from './codex-home.js';
import { writePiAgentDir } from './model-homes.js';
import { removeScratch } from './scratch.js';

/** The CLIs a suite can drive. */
export type SuiteProvider = 'claude-code' | 'codex' | 'pi' | 'gemini' | 'qwen' | 'copilot' | 'opencode' | 'cline' | 'kilo';

/** The pinned binary (test/support/clis.ts) of each provider. */
export const pinnedName: Record<SuiteProvider, PinnedCliName> = pinnedCliOf;

/** The pinned version of a provider's CLI. */
export function pinnedVersion(provider: SuiteProvider): string {
  return pinnedCli[pinnedName[provider]].version;
}

interface ProviderHome {
  env: Record<string, string>;
  /** Where the CLI keeps its config and sessions. */
  configDir: string;
}

/**
 * How each CLI is pointed at the scripted model in a throwaway home under `root`. Claude Code and
 * Gemini (and Qwen Code) get the home cal itself builds for its scripted model (the adapter's scriptedModelEnv,
 * as demo and certify use it: onboarding and dialogs pre-answered there). Codex and Pi get a
 * config that stands for the user's own (a custom provider at the scripted model, nothing
 * pre-answered), because their tests prove that cal uses such a config as it is.
 */
const homes: Record<SuiteProvider, (root: string, modelUrl: string, base: Record<string, string>) => Promise<ProviderHome>> = {
  async 'claude-code'(root, modelUrl, base) {
    const env = await claudeCodeAdapter.scriptedModelEnv(root, modelUrl, base);
    // The house rule for every Claude run: no self-update in the middle of a test.
    return { env: { ...env, DISABLE_AUTOUPDATER: '1' }, configDir: path.join(env.HOME!, '.claude') };
  },
  async codex(root, modelUrl, base) {
    const { env, codexHome } = await codexTestEnv(root, modelUrl, base);
    return { env, configDir: codexHome };
  },
  async pi(root, modelUrl, base) {
    const agentDir = path.join(root, 'pi-agent');
    await writePiAgentDir(agentDir, modelUrl);
    return { env: { ...base, PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: '1' }, configDir: agentDir };
  },
  async gemini(root, modelUrl, base) {
    const env = await geminiAdapter.scriptedModelEnv(root, modelUrl, base);
    return { env, configDir: path.join(env.GEMINI_CLI_HOME!, '.gemini') };
  },
  async qwen(root, modelUrl, base) {
    const env = await qwenAdapter.scriptedModelEnv(root, modelUrl, base);
    return { env, configDir: path.join(env.HOME!, '.qwen') };
  },
  async copilot(root, modelUrl, base) {
    const env = await copilotAdapter.scriptedModelEnv(root, modelUrl, { ...base, COPILOT_PKG_CACHE_HOME: copilotPackageCache });
    return { env, configDir: env.COPILOT_HOME! };
  },
  async opencode(root, modelUrl, base) {
    const env = await opencodeAdapter.scriptedModelEnv(root, modelUrl, base);
    return { env, configDir: path.join(env.XDG_DATA_HOME!, 'opencode') };
  },
  async cline(root, modelUrl, base) {
    const env = await clineAdapter.scriptedModelEnv(root, modelUrl, base);
    return { env, configDir: path.join(env.HOME!, '.cline', 'data') };
  },
  async kilo(root, modelUrl, base) {
    const env = await kiloAdapter.scriptedModelEnv(root, modelUrl, base);
    return { env, configDir: path.join(env.XDG_DATA_HOME!, 'kilo') };
  },
};

export interface SuiteCalOptions {
  /** stdin for cal. */
  input?: string;
  /** Variables added to (or replacing some of) the suite's environment for this run. */
  env?: Record<string, string>;
  /** Another state directory than the suite's own (see stateDir). */
  state?: string;
  /** The directory cal runs in (default: the test's own). */
  cwd?: string;
}

/** A cal run in the background, ended by the suite's close if it is still running then. */
export interface BackgroundCal {
  child: ChildProcess;
  /** stderr so far. */
  stderr(): string;
  /** Resolves once cal has exited (code -1 when a signal ended it). */
  done: Promise<CalRun>;
}

/**
 * What a test file driving a real CLI through `cal` needs: the scripted model, a scratch folder
 * (real path) holding a throwaway HOME and the CLI's config, a working dir and a state dir (so a
 * tmux server of its own), and `cal` bound to them.
 */
export interface CliSuite {
  provider: SuiteProvider;
  server: ModelServer;
  root: string;
  /** $HOME of every run. */
  home: string;
  /** Where the CLI keeps its config and sessions: Claude's ~/.claude, CODEX_HOME, Pi's agent dir, Gemini's .gemini. */
  configDir: string;
  state: string;
  work: string;
  /** The complete environment of every run (nothing inherited): the pinned CLIs first on PATH. */
  env: Record<string, string>;
  /** A further state directory `<root>/<name>` (so a further tmux server), ended with the suite. */
  stateDir(name: string): string;
  /** A further working directory `<root>/<name>`, created. */
  workDir(name: string): Promise<string>;
  /** The tmux socket cal uses for a state directory (default: the suite's). */
  tmuxSocket(state?: string): Promise<string>;
  cal(args: string[], opts?: SuiteCalOptions): Promise<CalRun>;
  /** `cal inspect <handle> --json`, parsed. */
  inspect(handle: string, opts?: SuiteCalOptions): Promise<any>;
  /** Starts cal without waiting for it (stdin closed, stdout and stderr collected), in a process group of its own. */
  spawnCal(args: string[], opts?: Omit<SuiteCalOptions, 'input'>): BackgroundCal;
  /**
   * Ends what the suite started and nothing else: its background cal runs (with their process
   * groups), the tmux server of each of its state dirs (and so the CLIs in their panes), its
   * model server; then removes the scratch folder (kept with CAL_KEEP_TEST_HOMES=1).
   */
  close(): Promise<void>;
}

export interface CliSuiteOptions {
  /** Names the scratch folder: cal-<prefix>-XXXXXX (default: the provider). */
  prefix?: string;
  /** Variables set on top of the CLI's home (e.g. keys a test watches for). */
  env?: Record<string, string>;
}

export async function cliSuite(provider: SuiteProvider, opts: CliSuiteOptions = {}): Promise<CliSuite> {
  const server = await startModelServer({});
  const root = realpathSync(await scratchDir(opts.prefix ?? provider));
  const home = path.join(root, 'home');
  await fs.mkdir(home, { recursive: true, mode: 0o700 });
  const work = path.join(root, 'work');
  await fs.mkdir(work);
  // The pinned CLIs of this repository are what the CLI's name on PATH finds.
  const base = baseEnv({ PATH: `${path.dirname(cliBin(pinnedName[provider]))}:${process.env.PATH ?? '/usr/bin:/bin'}`, HOME: home });
  const built = await homes[provider](root, server.url, base);
  const env = { ...built.env, ...opts.env };
  const state = path.join(root, 'state');
  const states = [state];
  const background: ChildProcess[] = [];
  const argv = (args: string[], o: SuiteCalOptions) => ['--state-dir', o.state ?? state, ...args];

  const suite: CliSuite = {
    provider,
    server,
    root,
    // A CLI whose adapter builds a home of its own (Qwen Code's qwen-home) runs with that HOME.
    home: env.HOME ?? home,
    configDir: built.configDir,
    state,
    work,
    env,
    stateDir(name) {
      const dir = path.join(root, name);
      states.push(dir);
      return dir;
    },
    async workDir(name) {
      const dir = path.join(root, name);
      await fs.mkdir(dir, { recursive: true });
      return dir;
    },
    tmuxSocket: (dir = state) => tmuxSocketFor(path.join(dir, 'tmux')),
    cal: (args, o = {}) => runCal(argv(args, o), { env: { ...env, ...o.env }, input: o.input, ...(o.cwd ? { cwd: o.cwd } : {}) }),
    inspect: async (handle, o = {}) => (await suite.cal(['inspect', handle, '--json'], o)).json,
    spawnCal(args, o = {}) {
      // Its own process group, so that close can end what it started too (a command it runs).
      const child = spawn(process.execPath, [calBin, ...argv(args, o)], { env: { ...env, ...o.env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      background.push(child);
      let stdout = '';
      let stderr = '';
      child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const done = new Promise<CalRun>((resolve, reject) => {
        child.on('error', reject);
        child.on('close', (code) => {
          let json: unknown = null;
          try {
            json = JSON.parse(stdout);
          } catch {
            json = null;
          }
          resolve({ code: code ?? -1, stdout: stdout.replace(/\n$/, ''), stderr: stderr.replace(/\n$/, ''), json });
        });
      });
      return { child, stderr: () => stderr, done };
    },
    async close() {
      // Only a group whose leader is not yet reaped: its id cannot belong to anyone else then.
      for (const child of background) {
        if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
          try {
            process.kill(-child.pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
      }
      for (const dir of states) await killStateTmux(dir).catch(() => undefined);
      await server.close();
      if (process.env.CAL_KEEP_TEST_HOMES !== '1') await removeScratch(root);
    },
  };
  return suite;
}

/** A new git repository at `dir` (made if missing), by its real path: a folder a CLI may ask to trust. */
export async function freshGitRepo(dir: string): Promise<string> {
  await fs.mkdir(dir, { recursive: true });
  execFileSync('git', ['init', '-q', dir], { stdio: 'pipe' });
  return realpathSync(dir);
}
