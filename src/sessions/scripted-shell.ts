/**
 * The shell environment of `cal model env`: every CLI that can run offline pointed at a running
 * `cal model serve`, with the throwaway config files each one needs written under a folder cal
 * owns. It reuses each adapter's scriptedModelEnv (the demo's and certify's configuration) with
 * HOME left alone, and reports what to set and what to unset, so a key already in the user's
 * shell (GEMINI_API_KEY, OPENAI_API_KEY, ANTHROPIC_API_KEY) never diverts a CLI.
 */
import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { CalError } from '../errors.js';
import type { ProviderName } from '../handles/schema.js';
import { loadCliAdapter, loadRegisteredAdapters } from '../adapters/registry.js';
import { packagePath } from '../util/package-root.js';
import { ensurePrivateDir } from '../state/fs.js';

export interface ScriptedShellEnv {
  /** Variables to export, in a stable order. */
  set: Array<[string, string]>;
  /** Variables to unset (a user's real key that would otherwise reach a CLI). */
  unset: string[];
  /** The providers configured. */
  providers: ProviderName[];
}

/** The CLI providers that can be pointed at the scripted model (cursor and agy cannot). */
export async function scriptedProviders(): Promise<ProviderName[]> {
  return (await loadRegisteredAdapters()).filter((a) => a.liveCertificationOnly === undefined).map((a) => a.name);
}

function onPath(name: string, pathVar: string | undefined): boolean {
  return (pathVar ?? '').split(path.delimiter).some((dir) => dir !== '' && existsSync(path.join(dir, name)));
}

/**
 * Writes the config of each provider under `dir/<provider>` and returns the variables to set and
 * unset. A CLI missing from PATH but pinned beside cal (a checkout's devDependencies, as the demo
 * uses) is linked into `dir/bin`, which goes first on PATH.
 *
 * Run again (a second `eval "$(cal model env)"`), it rewrites only the files cal owns there (the
 * config files and the links of `bin`): the same folders are the CLIs' homes (CODEX_HOME, Pi's
 * agent dir, CLAUDE_CONFIG_DIR…), which hold every session started in that shell, so nothing
 * under them is ever removed (issue 50, item 7).
 */
export async function scriptedShellEnv(dir: string, modelUrl: string, base: Record<string, string>, only?: ProviderName): Promise<ScriptedShellEnv> {
  const all = await scriptedProviders();
  if (only !== undefined && !all.includes(only)) {
    const adapter = await loadCliAdapter(only);
    throw new CalError('usage', `${only} cannot use the scripted model: ${adapter.liveCertificationOnly ?? 'no scripted configuration'}; choose one of ${all.join(', ')}`);
  }
  const providers = only ? [only] : all;
  await ensurePrivateDir(dir);
  const set = new Map<string, string>();
  const unset = new Set<string>();
  for (const provider of providers) {
    const adapter = await loadCliAdapter(provider);
    await ensurePrivateDir(path.join(dir, provider));
    const env = await adapter.scriptedModelEnv(path.join(dir, provider), modelUrl, base, { keepHome: true });
    for (const [key, value] of Object.entries(env)) {
      if (base[key] === value) continue;
      const earlier = set.get(key);
      if (earlier !== undefined && earlier !== value) throw new CalError('internal', `${key} is set differently for two providers; configure one with --provider`);
      set.set(key, value);
    }
    for (const key of Object.keys(base)) if (!(key in env) && SHELL_NAME.test(key)) unset.add(key);
  }
  const binDir = path.join(dir, 'bin');
  const linked: string[] = [];
  for (const provider of providers) {
    const { executable } = await loadCliAdapter(provider);
    const bundled = packagePath('node_modules', '.bin', executable);
    if (onPath(executable, base.PATH) || !existsSync(bundled)) continue;
    await ensurePrivateDir(binDir);
    // The link is cal's own: an earlier call's is replaced, never followed.
    await fs.rm(path.join(binDir, executable), { force: true });
    await fs.symlink(bundled, path.join(binDir, executable));
    linked.push(executable);
  }
  if (linked.length > 0) set.set('PATH', `${binDir}${path.delimiter}${base.PATH ?? ''}`);
  return { set: [...set.entries()].sort(([a], [b]) => a.localeCompare(b)), unset: [...unset].sort(), providers };
}

/** A name a POSIX shell can export or unset. */
const SHELL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** POSIX shell single-quoting. */
export function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** The lines `eval "$(cal model env)"` runs. */
export function shellLines(env: ScriptedShellEnv): string[] {
  const badName = env.set.find(([key]) => !SHELL_NAME.test(key)) ?? env.unset.find((key) => !SHELL_NAME.test(key));
  if (badName !== undefined) throw new CalError('internal', `${JSON.stringify(badName)} is not a shell variable name`);
  return [...env.unset.map((key) => `unset ${key}`), ...env.set.map(([key, value]) => `export ${key}=${shellQuote(value)}`)];
}
