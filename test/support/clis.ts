import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Root of this repository (test/support/ is two levels down). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The pinned CLI versions the project installs as devDependencies (see package.json). */
export const pinnedCli = {
  claude: { bin: 'claude', version: '2.1.328' },
  codex: { bin: 'codex', version: '0.169.0' },
  gemini: { bin: 'gemini', version: '0.61.0' },
  pi: { bin: 'pi', version: '1.6.0' },
  qwen: { bin: 'qwen', version: '0.24.4' },
  copilot: { bin: 'copilot', version: '1.0.102' },
  opencode: { bin: 'opencode', version: '1.18.33' },
  cline: { bin: 'cline', version: '3.0.65' },
  kilo: { bin: 'kilo', version: '7.7.7' },
} as const;

export type PinnedCliName = keyof typeof pinnedCli;

/** Each provider's pinned CLI, by its name in pinnedCli. */
export const pinnedCliOf = { 'claude-code': 'claude', codex: 'codex', pi: 'pi', gemini: 'gemini', qwen: 'qwen', copilot: 'copilot', opencode: 'opencode', cline: 'cline', kilo: 'kilo' } as const satisfies Record<string, PinnedCliName>;

/** Path of a pinned CLI binary installed by `npm ci`; throws if it is missing so tests fail loudly. */
export function cliBin(name: PinnedCliName): string {
  const p = path.join(repoRoot, 'node_modules', '.bin', pinnedCli[name].bin);
  if (!existsSync(p)) throw new Error(`pinned CLI ${name} is not installed at ${p}: run npm ci`);
  return p;
}

/** The built `cal` entry (tests run the built CLI as a black box). */
export const calBin = path.join(repoRoot, 'bin', 'cal.cjs');

/**
 * Where GitHub Copilot CLI unpacks its ~235 MB package (`COPILOT_PKG_CACHE_HOME`): one folder for
 * every test, so a throwaway HOME does not unpack it again.
 */
export const copilotPackageCache = path.join(repoRoot, '.tmp', 'copilot-pkg-cache');
