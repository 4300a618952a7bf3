/**
 * Throwaway, isolated homes for the real pinned CLIs, each pointed at a scripted model server
 * (src/model/server.ts). Every home lives in its own mkdtemp directory under os.tmpdir(); the
 * environment it returns is complete (it does not inherit the caller's environment, so no real
 * API key or config leaks in).
 *
 *   const server = await startModelServer();
 *   const h = await makeCodexHome(server.url);
 *   const r = await runCli(h, ['exec', '--json', '--skip-git-repo-check', 'hello']);
 *   await h.cleanup();
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { cliBin, type PinnedCliName } from './clis.js';

export interface ModelCliHome {
  cli: PinnedCliName;
  /** The mkdtemp directory holding everything below. */
  root: string;
  /** $HOME for the CLI. */
  home: string;
  /** A fresh working directory to run the CLI in. */
  cwd: string;
  /** The complete environment to spawn the CLI with. */
  env: Record<string, string>;
  /** The pinned binary. */
  bin: string;
  /** Codex: $CODEX_HOME. Pi: $PI_CODING_AGENT_DIR. Gemini: $HOME/.gemini. Claude: $HOME/.claude. */
  configDir: string;
  /** Remove the whole root (set CAL_KEEP_TEST_HOMES=1 to keep it for debugging). */
  cleanup(): Promise<void>;
}

export interface ModelHomeOptions {
  /** Extra environment variables (override the defaults). */
  env?: Record<string, string>;
  /** Model name to configure (Codex and Pi) or the one tests should pass with -m (Gemini). */
  model?: string;
}

/** The model name the homes configure for Codex and Pi. */
export const MOCK_MODEL = 'mock-model';
/** The model Gemini CLI should be run with (`-m`), which skips its router request. */
export const GEMINI_TEST_MODEL = 'gemini-2.5-flash';

async function makeRoot(cli: PinnedCliName): Promise<{ root: string; home: string; cwd: string; tmp: string }> {
  const root = await mkdtemp(path.join(os.tmpdir(), `cal-model-${cli}-`));
  const home = path.join(root, 'home');
  const cwd = path.join(root, 'work');
  const tmp = path.join(root, 'tmp');
  await Promise.all([mkdir(home, { recursive: true }), mkdir(cwd, { recursive: true }), mkdir(tmp, { recursive: true })]);
  return { root, home, cwd, tmp };
}

function baseEnv(home: string, tmp: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: home,
    TMPDIR: tmp,
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    TERM: 'xterm-256color',
    NO_COLOR: '1',
  };
}

function cleanupFn(root: string): () => Promise<void> {
  return async () => {
    if (process.env.CAL_KEEP_TEST_HOMES === '1') return;
    await rm(root, { recursive: true, force: true, maxRetries: 3 });
  };
}

/** Claude Code: $HOME/.claude.json pre-answers onboarding and trusts the work dir; auth by token (no key dialog). */
export async function makeClaudeHome(modelUrl: string, opts: ModelHomeOptions = {}): Promise<ModelCliHome> {
  const { root, home, cwd, tmp } = await makeRoot('claude');
  await writeFile(
    path.join(home, '.claude.json'),
    JSON.stringify({ hasCompletedOnboarding: true, projects: { [cwd]: { hasTrustDialogAccepted: true } } }, null, 2),
  );
  await mkdir(path.join(home, '.claude'), { recursive: true });
  const env = {
    ...baseEnv(home, tmp),
    ANTHROPIC_BASE_URL: modelUrl,
    ANTHROPIC_AUTH_TOKEN: 'dummy',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    CLAUDE_CODE_MAX_RETRIES: '0',
    ...opts.env,
  };
  return { cli: 'claude', root, home, cwd, env, bin: cliBin('claude'), configDir: path.join(home, '.claude'), cleanup: cleanupFn(root) };
}

/** The Codex config.toml for a custom `mock` provider at `<modelUrl>/v1` (no retries, no network lookups). */
export function codexConfigToml(modelUrl: string, cwd: string, model = MOCK_MODEL): string {
  return [
    `model = ${JSON.stringify(model)}`,
    'model_provider = "mock"',
    'check_for_update_on_startup = false',
    'approval_policy = "never"',
    'sandbox_mode = "workspace-write"',
    '',
    '[model_providers.mock]',
    'name = "Mock"',
    `base_url = ${JSON.stringify(`${modelUrl}/v1`)}`,
    'wire_api = "responses"',
    'env_key = "MOCK_API_KEY"',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
    '[features]',
    'plugins = false',
    'unbounded_connection_retries = false',
    '',
    '[analytics]',
    'enabled = false',
    '',
    `[projects.${JSON.stringify(cwd)}]`,
    'trust_level = "trusted"',
    '',
    '[tui]',
    'screen_reader_detection_done = true',
    'resume_cwd = "session"',
    '',
  ].join('\n');
}

/** Codex: $CODEX_HOME/config.toml with the mock provider. Run `exec` with `--skip-git-repo-check`; the TUI with `--no-daemon`. */
export async function makeCodexHome(modelUrl: string, opts: ModelHomeOptions = {}): Promise<ModelCliHome> {
  const { root, home, cwd, tmp } = await makeRoot('codex');
  const codexHome = path.join(root, 'codex-home');
  await mkdir(codexHome, { recursive: true });
  await writeFile(path.join(codexHome, 'config.toml'), codexConfigToml(modelUrl, cwd, opts.model));
  const env = { ...baseEnv(home, tmp), CODEX_HOME: codexHome, MOCK_API_KEY: 'dummy', ...opts.env };
  return { cli: 'codex', root, home, cwd, env, bin: cliBin('codex'), configDir: codexHome, cleanup: cleanupFn(root) };
}

/** Gemini CLI: settings.json selects API-key auth, disables session retention, updates and telemetry; the workspace is trusted by env. */
export async function makeGeminiHome(modelUrl: string, opts: ModelHomeOptions = {}): Promise<ModelCliHome> {
  const { root, home, cwd, tmp } = await makeRoot('gemini');
  const dir = path.join(home, '.gemini');
  await mkdir(dir, { recursive: true });
  const settings = {
    security: { auth: { selectedType: 'gemini-api-key' } },
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false, maxAttempts: 1, sessionRetention: { enabled: false } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
  };
  await writeFile(path.join(dir, 'settings.json'), JSON.stringify(settings, null, 2));
  const env = {
    ...baseEnv(home, tmp),
    GEMINI_API_KEY: 'dummy',
    GOOGLE_GEMINI_BASE_URL: modelUrl,
    GEMINI_CLI_TRUST_WORKSPACE: 'true',
    ...opts.env,
  };
  return { cli: 'gemini', root, home, cwd, env, bin: cliBin('gemini'), configDir: dir, cleanup: cleanupFn(root) };
}

/**
 * A Pi agent dir: models.json with provider `mock` (openai-completions at `<modelUrl>/v1`) and
 * settings.json choosing it, with retries off and no install telemetry.
 */
export async function writePiAgentDir(agentDir: string, modelUrl: string, model = MOCK_MODEL): Promise<void> {
  await mkdir(agentDir, { recursive: true });
  const models = {
    providers: {
      mock: {
        baseUrl: `${modelUrl}/v1`,
        api: 'openai-completions',
        apiKey: 'dummy',
        compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
        models: [{ id: model, contextWindow: 128000, maxTokens: 4096 }],
      },
    },
  };
  const settings = {
    defaultProvider: 'mock',
    defaultModel: model,
    retry: { enabled: false, provider: { maxRetries: 0 } },
    enableInstallTelemetry: false,
    quietStartup: true,
  };
  await writeFile(path.join(agentDir, 'models.json'), JSON.stringify(models, null, 2));
  await writeFile(path.join(agentDir, 'settings.json'), JSON.stringify(settings, null, 2));
}

/** Pi: the agent dir of writePiAgentDir, offline. */
export async function makePiHome(modelUrl: string, opts: ModelHomeOptions = {}): Promise<ModelCliHome> {
  const { root, home, cwd, tmp } = await makeRoot('pi');
  const agentDir = path.join(root, 'pi-agent');
  await writePiAgentDir(agentDir, modelUrl, opts.model);
  const env = { ...baseEnv(home, tmp), PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: '1', ...opts.env };
  return { cli: 'pi', root, home, cwd, env, bin: cliBin('pi'), configDir: agentDir, cleanup: cleanupFn(root) };
}

export interface CliRun {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  durationMs: number;
  timedOut: boolean;
}

/**
 * Run the home's CLI non-interactively: stdin is ignored (/dev/null), the child gets its own
 * process group, and on timeout that group (and only it) is killed.
 */
export function runCli(
  h: ModelCliHome,
  args: string[],
  opts: { timeoutMs?: number; cwd?: string; env?: Record<string, string> } = {},
): Promise<CliRun> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(h.bin, args, {
      cwd: opts.cwd ?? h.cwd,
      env: { ...h.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          child.kill('SIGKILL');
        }
      }
    }, opts.timeoutMs ?? 60_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (exitCode, signal) => {
      clearTimeout(timer);
      resolve({ exitCode, signal, stdout, stderr, durationMs: Date.now() - started, timedOut });
    });
  });
}

/** Parse the JSONL a CLI printed (non-JSON lines are skipped). */
export function jsonLines(text: string): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t.startsWith('{')) continue;
    try {
      out.push(JSON.parse(t) as Record<string, unknown>);
    } catch {
      // not a JSON line
    }
  }
  return out;
}
