import { existsSync, readFileSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { CalError } from '../../errors.js';
import { MANAGED_HOME_MARKER } from '../claude-code/home.js';

/**
 * Where Gemini CLI 0.61.0 keeps its state: `$GEMINI_CLI_HOME/.gemini` when that is set (it wins
 * over HOME), else `$HOME/.gemini`.
 */
export function geminiDir(env: Record<string, string>): string {
  const base = env.GEMINI_CLI_HOME || env.HOME;
  if (!base) throw new CalError('usage', 'neither GEMINI_CLI_HOME nor HOME is set: Gemini CLI cannot find its settings and sessions');
  return path.join(base, '.gemini');
}

/** The system settings file Gemini CLI reads (it overrides the user's settings). */
export function systemSettingsPath(env: Record<string, string>): string {
  return env.GEMINI_CLI_SYSTEM_SETTINGS_PATH || '/etc/gemini-cli/settings.json';
}

/** Gemini's settings files are JSON with comments: drop `//` and `/* *\/` comments outside strings. */
export function parseSettings(text: string): unknown {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (inString) {
      out += c;
      if (c === '\\') out += text[++i] ?? '';
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') {
      inString = true;
      out += c;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
      out += '\n';
    } else if (c === '/' && text[i + 1] === '*') {
      i += 2;
      while (i < text.length && !(text[i] === '*' && text[i + 1] === '/')) i++;
      i++;
    } else {
      out += c;
    }
  }
  return out.trim() === '' ? {} : JSON.parse(out);
}

/** `general.sessionRetention.enabled` of one settings file: true, false, or undefined when not set (or no file). */
export function retentionSetting(file: string): boolean | undefined {
  if (!existsSync(file)) return undefined;
  let parsed: unknown;
  try {
    parsed = parseSettings(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new CalError('usage', `Gemini CLI settings ${file} is not valid JSON: ${(err as Error).message}`);
  }
  const enabled = (parsed as { general?: { sessionRetention?: { enabled?: unknown } } } | null)?.general?.sessionRetention?.enabled;
  return typeof enabled === 'boolean' ? enabled : undefined;
}

/**
 * Session retention must be off (measured on 0.61.0): a session resumed in a later UTC minute
 * leaves a stray `session-<minute>-<id8>.jsonl` holding only the context, and with retention on,
 * the next start of Gemini CLI in that project treats it as empty and deletes every file ending
 * in `-<id8>.jsonl`, the real transcript included. cal turns it off in the Gemini home it manages;
 * only a system settings file (which overrides every other) can turn it on again, and cal does
 * not edit that, so it refuses to start or resume and says how.
 */
export function checkRetentionOff(env: Record<string, string>): void {
  const system = systemSettingsPath(env);
  if (retentionSetting(system) === true) {
    throw new CalError('usage', `Gemini CLI session retention is on in the system settings ${system}: it deletes a resumed session's transcript (a stray file of the same id looks empty to it). Set "general": {"sessionRetention": {"enabled": false}} there`);
  }
}

/**
 * The settings of a throwaway Gemini home that cal manages (demo, certify, tests): API-key auth
 * against the scripted model, a fixed model (so no router request), retention off, no update
 * checks or telemetry, one attempt per request, and shell commands without a confirmation dialog.
 */
export function scriptedSettings(): Record<string, unknown> {
  return {
    security: { auth: { selectedType: 'gemini-api-key' } },
    model: { name: SCRIPTED_MODEL },
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false, maxAttempts: 1, sessionRetention: { enabled: false } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    // No confirmation dialog for shell commands in a pane nobody watches (YOLO exists only as a flag).
    tools: { allowed: ['run_shell_command'] },
  };
}

/** A real Gemini model name (the scripted model answers any); a concrete one skips the router. */
export const SCRIPTED_MODEL = 'gemini-2.5-flash';

/** True when the Gemini home in this environment is a throwaway one cal made (scriptedGeminiEnv). */
export function isManagedGeminiHome(env: Record<string, string>): boolean {
  const base = env.GEMINI_CLI_HOME || env.HOME;
  return Boolean(base) && existsSync(path.join(base as string, MANAGED_HOME_MARKER));
}

/** The header the scripted model reads a Gemini session's id from (its request log's session key). */
export const SESSION_HEADER = 'x-gemini-session-id';

/** Creates `<dir>/gemini-home/.gemini/settings.json` and returns the environment for it. */
export async function scriptedGeminiEnv(dir: string, modelUrl: string, env: Record<string, string>): Promise<Record<string, string>> {
  const home = path.join(dir, 'gemini-home');
  const gemini = path.join(home, '.gemini');
  await fs.mkdir(gemini, { recursive: true, mode: 0o700 });
  await fs.writeFile(path.join(home, MANAGED_HOME_MARKER), 'This Gemini home is managed by cal.\n', { mode: 0o600 });
  await fs.writeFile(path.join(gemini, 'settings.json'), `${JSON.stringify(scriptedSettings(), null, 2)}\n`, { mode: 0o600 });
  const out: Record<string, string> = { ...env, GEMINI_CLI_HOME: home, GOOGLE_GEMINI_BASE_URL: modelUrl, GEMINI_API_KEY: 'cal-scripted-model' };
  // A real key or system settings of the user must never reach the scripted model's runs.
  delete out.GOOGLE_API_KEY;
  delete out.GOOGLE_GENAI_USE_VERTEXAI;
  delete out.GEMINI_CLI_SYSTEM_SETTINGS_PATH;
  delete out.GEMINI_CLI_SYSTEM_DEFAULTS_PATH;
  return out;
}
