import { existsSync, readFileSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { z } from '../../util/zod.js';
import { CalError } from '../../errors.js';
import type { ScriptedEnvOptions } from '../types.js';
import { optionKeys } from '../dialog-option.js';

/**
 * Where GitHub Copilot CLI keeps its state (measured on 1.0.102, `copilot help environment`):
 * `COPILOT_HOME`, else `$HOME/.copilot`. Sessions are `session-state/<id>/events.jsonl` there,
 * folder trust is the `trustedFolders` list of `config.json` (a JSON file Copilot writes itself,
 * with two `//` comment lines on top).
 */
export function copilotHome(env: Record<string, string>): string {
  const dir = env.COPILOT_HOME;
  if (dir) {
    if (dir === '~' || dir.startsWith('~/')) return path.join(homeOf(env), dir.slice(2));
    return path.resolve(dir);
  }
  return path.join(homeOf(env), '.copilot');
}

function homeOf(env: Record<string, string>): string {
  const home = env.HOME;
  if (!home) throw new CalError('usage', 'HOME is not set: Copilot keeps its config and sessions under $HOME/.copilot (or COPILOT_HOME)');
  return home;
}

/** The session's event log, whether or not Copilot wrote it yet. */
export function eventsFile(env: Record<string, string>, sessionId: string): string {
  return path.join(copilotHome(env), 'session-state', sessionId, 'events.jsonl');
}

/** A Copilot home cal made (demo, certify, tests, `cal model env`): the only one it pre-answers dialogs in. */
export const MANAGED_HOME_MARKER = '.cal-managed-home';

export function isManagedCopilotHome(env: Record<string, string>): boolean {
  return existsSync(path.join(copilotHome(env), MANAGED_HOME_MARKER));
}

const ConfigFile = z.object({ trustedFolders: z.array(z.string()).optional() }).passthrough();

/** `config.json` as Copilot writes it: leading `//` comment lines, then one JSON object. */
function readConfig(file: string): { header: string; config: z.infer<typeof ConfigFile> } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return { header: '', config: {} };
  }
  const lines = text.split('\n');
  let i = 0;
  while (i < lines.length && /^\s*\/\//.test(lines[i] ?? '')) i++;
  const body = lines.slice(i).join('\n').trim();
  const parsed = ConfigFile.safeParse(body === '' ? {} : JSON.parse(body));
  if (!parsed.success) throw new CalError('usage', `Copilot's ${file} is not the object Copilot writes: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return { header: lines.slice(0, i).join('\n'), config: parsed.data };
}

/**
 * Trusts `cwd` in Copilot's home (the user's own, or one cal manages) as its "Do you trust the
 * files in this folder?" dialog does when answered yes: `trustedFolders` in `config.json`, the
 * rest of the file kept. Resolves false when it was trusted already. Only under the trust
 * policy's default (engine/folder-trust.ts).
 */
export async function trustFolder(env: Record<string, string>, cwd: string): Promise<boolean> {
  const file = path.join(copilotHome(env), 'config.json');
  const { header, config } = readConfig(file);
  const trusted = config.trustedFolders ?? [];
  if (trusted.includes(cwd)) return false;
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const next = { ...config, trustedFolders: [...trusted, cwd] };
  await writeFileAtomic(file, `${header ? `${header}\n` : ''}${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
  return true;
}

/**
 * True when Copilot's TUI would not ask about `cwd`: `COPILOT_ALLOW_ALL=true` (which it reads as
 * trust), or `cwd` or a folder above it among the trusted folders (a trusted folder covers its
 * subfolders: measured on 1.0.102, test/e2e/copilot-trust.test.ts).
 */
export function isTrusted(env: Record<string, string>, cwd: string): boolean {
  if (env.COPILOT_ALLOW_ALL === 'true') return true;
  let trusted: string[];
  try {
    trusted = (readConfig(path.join(copilotHome(env), 'config.json')).config.trustedFolders ?? []).map((d) => path.resolve(d));
  } catch {
    return false;
  }
  return trusted.some((d) => cwd === d || cwd.startsWith(d.endsWith(path.sep) ? d : `${d}${path.sep}`));
}

/** The model name the scripted home configures. */
export const SCRIPTED_COPILOT_MODEL = 'scripted-model';

/**
 * Where Copilot unpacks its ~235 MB package on first run (`COPILOT_PKG_CACHE_HOME`, else
 * `~/.cache/copilot`): the user's own, so a throwaway home cal makes does not unpack it again.
 */
function packageCache(env: Record<string, string>): string {
  return env.COPILOT_PKG_CACHE_HOME || process.env.COPILOT_PKG_CACHE_HOME || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'copilot');
}

/**
 * A throwaway Copilot home at `<dir>/copilot-home` for cal's scripted model: BYOK against
 * `<url>/v1` (Chat Completions) with no GitHub login, offline (no auth, telemetry or update
 * check), and the marker that lets cal pre-answer folder trust in it. HOME is never changed (the
 * caller's own, or the throwaway one demo and certify give).
 */
export async function scriptedCopilotEnv(dir: string, modelUrl: string, env: Record<string, string>, opts: ScriptedEnvOptions = {}): Promise<Record<string, string>> {
  const home = path.join(dir, 'copilot-home');
  await fs.mkdir(home, { recursive: true, mode: 0o700 });
  await fs.writeFile(path.join(home, MANAGED_HOME_MARKER), 'This Copilot home is managed by cal; it may pre-answer CLI dialogs here.\n', { mode: 0o600 });
  const out: Record<string, string> = {
    ...env,
    COPILOT_HOME: home,
    // A user's shell keeps its HOME, and so its own package cache.
    ...(opts.keepHome ? {} : { COPILOT_PKG_CACHE_HOME: packageCache(env) }),
    COPILOT_PROVIDER_BASE_URL: `${modelUrl.replace(/\/+$/, '')}/v1`,
    COPILOT_PROVIDER_TYPE: 'openai',
    COPILOT_PROVIDER_API_KEY: 'cal-scripted-model',
    COPILOT_MODEL: SCRIPTED_COPILOT_MODEL,
    COPILOT_OFFLINE: 'true',
    COPILOT_AUTO_UPDATE: 'false',
  };
  // A token in the user's shell would send nothing anywhere offline, but keep the home's BYOK unambiguous.
  for (const key of ['COPILOT_PROVIDER_BEARER_TOKEN', 'COPILOT_PROVIDER_API_KEY_COMMAND', 'COPILOT_PROVIDER_WIRE_API', 'COPILOT_PROVIDER_MODEL_ID', 'COPILOT_PROVIDER_WIRE_MODEL']) delete out[key];
  return out;
}

/**
 * The keys that answer Copilot's "Confirm folder trust" dialog as cal's entry in `trustedFolders`
 * answered it, for a Copilot that lost the entry to a concurrent rewrite of `config.json`:
 * "2. Yes, and remember this folder for future sessions" (measured on 1.0.102: "1. Yes" is
 * selected, Down then Enter picks it, and Copilot then writes the folder to `trustedFolders` and
 * runs the message it was launched with). Null when the screen shows no such dialog.
 */
export function trustDialogKeys(screen: string): string[] | null {
  return optionKeys(screen, /^Do you trust the files in this folder\?$/, /^(?:\d+\.\s*)?Yes, and remember this folder for future sessions$/);
}

