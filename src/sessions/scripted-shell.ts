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
import { z } from '../util/zod.js';

export interface ScriptedShellEnv {
  /** Variables to export, in a stable order. */
  set: Array<[string, string]>;
  /** Variables to unset (a user's real key that would otherwise reach a CLI). */
  unset: string[];
  /** The providers configured. */
  providers: ProviderName[];
}

/** The file `cal model serve` writes under the state dir while it runs, so `cal model env` finds it. */
export function servedModelFile(stateDir: string): string {
  return path.join(stateDir, 'model-serve.json');
}

const ServedModel = z.object({ url: z.string().url(), pid: z.number().int().positive() });

export async function recordServedModel(stateDir: string, url: string): Promise<() => Promise<void>> {
  const file = servedModelFile(stateDir);
  await fs.mkdir(stateDir, { recursive: true, mode: 0o700 });
  await fs.writeFile(file, `${JSON.stringify({ url, pid: process.pid })}\n`, { mode: 0o600 });
  return async () => {
    // Only this server's record: a second serve started since owns the file now.
    const now = await readServedModel(stateDir).catch(() => null);
    if (now?.pid === process.pid) await fs.rm(file, { force: true });
  };
}

/** The URL of the `cal model serve` recorded in this state dir, or null when none runs. */
export async function readServedModel(stateDir: string): Promise<{ url: string; pid: number } | null> {
  let text: string;
  try {
    text = await fs.readFile(servedModelFile(stateDir), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const parsed = ServedModel.safeParse(JSON.parse(text));
  if (!parsed.success) return null;
  try {
    process.kill(parsed.data.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return null;
  }
  return parsed.data;
}

/** The CLI providers that can be pointed at the scripted model (cursor and agy cannot). */
export async function scriptedProviders(): Promise<ProviderName[]> {
  return (await loadRegisteredAdapters()).filter((a) => a.liveCertificationOnly === undefined).map((a) => a.name);
}

function onPath(name: string, pathVar: string | undefined): boolean {
  return (pathVar ?? '').split(path.delimiter).some((dir) => dir !== '' && existsSync(path.join(dir, name)));
}

/**
 * Writes the config of each provider under `dir/<provider>` (replacing what an earlier call wrote)
 * and returns the variables to set and unset. A CLI missing from PATH but pinned beside cal (a
 * checkout's devDependencies, as the demo uses) is linked into `dir/bin`, which goes first on PATH.
 */
export async function scriptedShellEnv(dir: string, modelUrl: string, base: Record<string, string>, only?: ProviderName): Promise<ScriptedShellEnv> {
  const all = await scriptedProviders();
  if (only !== undefined && !all.includes(only)) {
    const adapter = await loadCliAdapter(only);
    throw new CalError('usage', `${only} cannot use the scripted model: ${adapter.liveCertificationOnly ?? 'no scripted configuration'}; choose one of ${all.join(', ')}`);
  }
  const providers = only ? [only] : all;
  await fs.rm(dir, { recursive: true, force: true });
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const set = new Map<string, string>();
  const unset = new Set<string>();
  for (const provider of providers) {
    const adapter = await loadCliAdapter(provider);
    const env = await adapter.scriptedModelEnv(path.join(dir, provider), modelUrl, base, { keepHome: true });
    for (const [key, value] of Object.entries(env)) {
      if (base[key] === value) continue;
      const earlier = set.get(key);
      if (earlier !== undefined && earlier !== value) throw new CalError('internal', `${key} is set differently for two providers; configure one with --provider`);
      set.set(key, value);
    }
    for (const key of Object.keys(base)) if (!(key in env)) unset.add(key);
  }
  const binDir = path.join(dir, 'bin');
  const linked: string[] = [];
  for (const provider of providers) {
    const { executable } = await loadCliAdapter(provider);
    const bundled = packagePath('node_modules', '.bin', executable);
    if (onPath(executable, base.PATH) || !existsSync(bundled)) continue;
    await fs.mkdir(binDir, { recursive: true });
    await fs.symlink(bundled, path.join(binDir, executable));
    linked.push(executable);
  }
  if (linked.length > 0) set.set('PATH', `${binDir}${path.delimiter}${base.PATH ?? ''}`);
  return { set: [...set.entries()].sort(([a], [b]) => a.localeCompare(b)), unset: [...unset].sort(), providers };
}

/** POSIX shell single-quoting. */
export function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** The lines `eval "$(cal model env)"` runs. */
export function shellLines(env: ScriptedShellEnv): string[] {
  return [...env.unset.map((key) => `unset ${key}`), ...env.set.map(([key, value]) => `export ${key}=${shellQuote(value)}`)];
}
