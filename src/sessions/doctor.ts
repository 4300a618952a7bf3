/**
 * `cal doctor`: whether each CLI provider, tmux and the state directory are usable here, found
 * the way a turn finds them (the adapter's own resolveCli on PATH), with the release placed
 * against the adapter's supported floor and newest certified release.
 */
import { existsSync } from 'node:fs';
import { loadCliAdapter, loadRegisteredAdapters } from '../adapters/registry.js';
import { toCalError } from '../errors.js';
import type { ProviderName } from '../handles/schema.js';
import { resolveStateDir } from '../state/paths.js';
import { StateStore } from '../state/store.js';
import { packagePath } from '../util/package-root.js';
import { runFile } from '../util/spawn.js';

export type CliStatus = 'ok' | 'uncertified' | 'missing' | 'unsupported' | 'error';

export interface ProviderReport {
  provider: ProviderName;
  executable: string;
  status: CliStatus;
  usable: boolean;
  path: string | null;
  version: string | null;
  /** The oldest release cal supports and the newest it certified; null where the adapter has not measured them. */
  floor: string | null;
  certified: string | null;
  /** cal's pinned copy (a checkout's devDependency), used by `cal demo` and `cal model env`, when there is one. */
  pinnedCopy: string | null;
  /** What to do when it is not usable, or the error's message. */
  note: string | null;
}

export interface DoctorReport {
  providers: ProviderReport[];
  /** tmux, which runs every pane. */
  multiplexer: { usable: boolean; version: string | null; note: string | null };
  stateDir: { usable: boolean; path: string; note: string | null };
  /**
   * tmux and the state dir work, and: the provider asked for is usable (`--provider`), or at
   * least one CLI is (a bare `cal doctor`, where a CLI not installed is information, not a failure).
   */
  ready: boolean;
  /** Whether one provider was asked for (then it must be usable). */
  strict: boolean;
}

/** How to get each CLI when it is missing (its vendor's own package or installer). */
const INSTALL: Partial<Record<ProviderName, string>> = {
  'claude-code': 'npm install -g @anthropic-ai/claude-code',
  codex: 'npm install -g @openai/codex',
  gemini: 'npm install -g @google/gemini-cli',
  pi: 'npm install -g @earendil-works/pi-coding-agent',
  cursor: "Cursor's CLI installer (cursor-agent)",
  agy: "Google's Antigravity CLI installer (agy 1.1.8 or later)",
  qwen: 'npm install -g @qwen-code/qwen-code',
  opencode: 'npm install -g opencode-ai',
  cline: 'npm install -g cline',
  kilo: 'npm install -g @kilocode/cli',
};

async function probeProvider(provider: ProviderName, env: Record<string, string>): Promise<ProviderReport> {
  const adapter = await loadCliAdapter(provider);
  const bundled = packagePath('node_modules', '.bin', adapter.executable);
  const base = {
    provider,
    executable: adapter.executable,
    floor: adapter.versions?.floor ?? null,
    certified: adapter.versions?.certified ?? null,
    pinnedCopy: existsSync(bundled) ? bundled : null,
  };
  try {
    const cli = await adapter.resolveCli(undefined, env);
    const uncertified = cli.support === 'newer_than_certified';
    const note = uncertified ? `newer than the newest certified release; it runs, uncertified (cal certify --provider ${provider})` : null;
    return { ...base, status: uncertified ? 'uncertified' : 'ok', usable: true, path: cli.path, version: cli.version, note };
  } catch (err) {
    const e = toCalError(err);
    if (e.kind === 'cli_missing') {
      const how = INSTALL[provider] ?? 'its own installer';
      const pinned = base.pinnedCopy ? `; or put cal's pinned copy on PATH: export PATH="${packagePath('node_modules', '.bin')}:$PATH"` : '';
      return { ...base, status: 'missing', usable: false, path: null, version: null, note: `${adapter.executable} is not on PATH: ${how}${pinned}` };
    }
    const status: CliStatus = e.kind === 'cli_unsupported' ? 'unsupported' : 'error';
    const version = typeof e.details.actual === 'string' ? e.details.actual : null;
    return { ...base, status, usable: false, path: null, version, note: e.message };
  }
}

async function tmuxVersion(env: Record<string, string>): Promise<DoctorReport['multiplexer']> {
  const run = await runFile('tmux', ['-V'], { env, timeoutMs: 10_000 });
  if (run.exitCode !== 0) return { usable: false, version: null, note: 'tmux is not on PATH: install tmux 3.3 or later (apt-get install tmux)' };
  return { usable: true, version: run.stdout.trim().replace(/^tmux\s+/, ''), note: null };
}

async function stateDirUsable(stateDir: string | undefined): Promise<DoctorReport['stateDir']> {
  try {
    const store = await StateStore.open(stateDir);
    return { usable: true, path: store.layout.root, note: null };
  } catch (err) {
    const e = toCalError(err);
    let dir = stateDir ?? '';
    try {
      dir = resolveStateDir(stateDir);
    } catch {
      // an empty --state-dir: the message says so
    }
    return { usable: false, path: dir, note: e.message };
  }
}

/** Probes the providers asked for (all CLI providers when none is), tmux and the state dir. */
export async function doctor(env: Record<string, string>, stateDir: string | undefined, only?: ProviderName): Promise<DoctorReport> {
  // `acp` (any ACP agent by its --acp-command) has no executable of its own to look for.
  const names = only ? [(await loadCliAdapter(only)).name] : (await loadRegisteredAdapters()).map((a) => a.name).filter((n) => n !== 'acp');
  const [providers, multiplexer, state] = await Promise.all([Promise.all(names.map((n) => probeProvider(n, env))), tmuxVersion(env), stateDirUsable(stateDir)]);
  const clis = only ? providers.every((p) => p.usable) : providers.some((p) => p.usable);
  return { providers, multiplexer, stateDir: state, ready: clis && multiplexer.usable && state.usable, strict: only !== undefined };
}
