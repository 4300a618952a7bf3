import { existsSync, lstatSync, readFileSync, readlinkSync, symlinkSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { CalError } from '../../errors.js';
import type { SessionConfig } from '../types.js';
import { geminiDir, parseSettings } from './home.js';
import { readMcpServers } from '../mcp-config-file.js';
import { ensurePlainDirSync, writePlainFileSync } from '../../util/private-file.js';

/**
 * The Gemini home cal owns for one session (measured on 0.61.0; research:
 * adapters-gemini-cursor-agy-claude-structured.md §A). Gemini CLI has no per-launch MCP flag and
 * honours a system settings file only when root owns it and every folder above it, so every
 * launch of a session runs with `GEMINI_CLI_HOME=<session folder>/gemini-home`, whose
 * `.gemini/settings.json` cal writes afresh each launch: the user's own settings (read, never
 * written) plus what cal needs. The user's login and customisation files are symlinked in, never
 * copied: Gemini reads them through the link and writes a refreshed login back through it (it
 * writes in place, measured in the bundle), so no secret lands in cal's state. Sessions (`tmp/`,
 * `projects.json`, `history/`) live in the managed home: a resume must use the same home, and it
 * does, because the folder is the handle's own.
 */

/** Attempts per model request: Gemini's default is 10, each after a backoff of 5 s doubling to 30 s. */
export const MAX_ATTEMPTS = 3;

/** The context file cal's `--system-prompt` goes in: Gemini adds every context file to its system instruction. */
export const SYSTEM_PROMPT_FILE = 'cal-system-prompt.md';

/** What Gemini reads from its home that belongs to the user: login, keys, memory, commands, extensions. */
const USER_ENTRIES = [
  // Login (oauth-personal), its account list, the encrypted-file keychain, MCP and A2A OAuth tokens.
  'oauth_creds.json',
  'google_accounts.json',
  'gemini-credentials.json',
  'mcp-oauth-tokens.json',
  'a2a-oauth-tokens.json',
  // The `.env` Gemini loads when no folder above the working directory has one (may hold GEMINI_API_KEY).
  '.env',
  // The user's customisations.
  'commands',
  'skills',
  'agents',
  'policies',
  'extensions',
  'keybindings.json',
];

/**
 * `--mcp-config F` as Gemini `mcpServers` entries, each with `trust: true`: a server the user
 * named for this session needs no confirmation per call (and headless runs leave out tools that
 * would ask).
 */
export function geminiMcpServers(file: string): Record<string, Record<string, unknown>> {
  const servers = readMcpServers(file, 'Gemini CLI');
  const out: Record<string, Record<string, unknown>> = {};
  for (const [name, server] of Object.entries(servers)) {
    if ('command' in server) {
      out[name] = { command: server.command, args: server.args ?? [], ...(server.env ? { env: server.env } : {}), ...(server.cwd ? { cwd: server.cwd } : {}), trust: true };
    } else {
      out[name] = { url: server.url, type: server.type === 'sse' ? 'sse' : 'http', ...(server.headers ? { headers: server.headers } : {}), trust: true };
    }
  }
  return out;
}

/** The user's Gemini settings (`<their home>/.gemini/settings.json`), or {} when there is none. */
export function readUserSettings(env: Record<string, string>): Record<string, unknown> {
  const file = path.join(geminiDir(env), 'settings.json');
  if (!existsSync(file)) return {};
  let parsed: unknown;
  try {
    parsed = parseSettings(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new CalError('usage', `Gemini CLI settings ${file} is not valid JSON: ${(err as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new CalError('usage', `Gemini CLI settings ${file} is not a JSON object`);
  return parsed as Record<string, unknown>;
}

function section(settings: Record<string, unknown>, key: string): Record<string, unknown> {
  const v = settings[key];
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** The context file names the user's settings choose (Gemini's default: GEMINI.md). */
export function contextFileNames(user: Record<string, unknown>): string[] {
  const names = section(user, 'context').fileName;
  if (typeof names === 'string' && names.trim()) return [names];
  if (Array.isArray(names)) {
    const list = names.filter((n): n is string => typeof n === 'string' && n.trim() !== '');
    if (list.length) return list;
  }
  return ['GEMINI.md'];
}

export interface ManagedAdditions {
  mcpServers: Record<string, Record<string, unknown>>;
  systemPrompt: boolean;
  env: Record<string, string>;
}

/**
 * The managed settings: the user's, with
 * - `general.maxAttempts` at most MAX_ATTEMPTS, and `ui.errorVerbosity: "full"`: after its
 *   attempts the TUI asks in a dialog (answered by cal's stall keys) instead of retrying a
 *   failing model forever in silence, which it does with the default "low";
 * - `general.sessionRetention.enabled: false`: a resume in a later minute leaves a stray file
 *   that retention takes for an empty session, deleting every file of that id, the real
 *   transcript included;
 * - no auto-update (cal pins the executable);
 * - the launch's MCP servers over the user's, and cal's system prompt file as one more context
 *   file after the user's own;
 * - API-key auth selected when the user selected none and GEMINI_API_KEY is set (else the TUI
 *   opens with an authentication dialog).
 */
export function managedSettings(user: Record<string, unknown>, add: ManagedAdditions): Record<string, unknown> {
  const general = section(user, 'general');
  const attempts = typeof general.maxAttempts === 'number' && general.maxAttempts >= 1 ? Math.min(general.maxAttempts, MAX_ATTEMPTS) : MAX_ATTEMPTS;
  const out: Record<string, unknown> = {
    ...user,
    general: {
      ...general,
      maxAttempts: attempts,
      sessionRetention: { ...section(general, 'sessionRetention'), enabled: false },
      enableAutoUpdate: false,
      enableAutoUpdateNotification: false,
    },
    ui: { ...section(user, 'ui'), errorVerbosity: 'full' },
  };
  if (Object.keys(add.mcpServers).length) out.mcpServers = { ...section(user, 'mcpServers'), ...add.mcpServers };
  if (add.systemPrompt) out.context = { ...section(user, 'context'), fileName: [...contextFileNames(user).filter((n) => n !== SYSTEM_PROMPT_FILE), SYSTEM_PROMPT_FILE] };
  const security = section(user, 'security');
  if (section(security, 'auth').selectedType === undefined && add.env.GEMINI_API_KEY) {
    out.security = { ...security, auth: { ...section(security, 'auth'), selectedType: 'gemini-api-key' } };
  }
  return out;
}

/** `<session folder>/gemini-home`: the GEMINI_CLI_HOME of every launch of that session. */
export function managedHome(sessionDir: string): string {
  return path.join(sessionDir, 'gemini-home');
}

/**
 * `managed` points at `target` (the user's), when the user has it. A real file or folder Gemini
 * created there itself during the session is left alone; a stale link is replaced.
 */
function linkUserEntry(target: string, managed: string): void {
  if (!existsSync(target)) return;
  let current: string | null = null;
  try {
    const st = lstatSync(managed);
    if (!st.isSymbolicLink()) return;
    current = readlinkSync(managed);
  } catch {
    current = null;
  }
  if (current === target) return;
  if (current !== null) unlinkSync(managed);
  symlinkSync(target, managed);
}

/**
 * Writes the managed home for one launch (synchronously: `launch` is) and returns the
 * environment that points Gemini at it. HOME is left as it is, so tools still see the user's.
 */
export function prepareManagedHome(env: Record<string, string>, config: SessionConfig, sessionDir: string): { home: string; env: Record<string, string> } {
  const userDir = geminiDir(env);
  const userBase = path.dirname(userDir);
  const user = readUserSettings(env);
  const home = managedHome(sessionDir);
  const dir = path.join(home, '.gemini');
  // homes/<id>, its gemini-home and .gemini: plain folders, no link planted in their place.
  ensurePlainDirSync(dir, path.dirname(sessionDir));
  const mcpServers = config.mcpConfigPath ? geminiMcpServers(config.mcpConfigPath) : {};
  const settings = managedSettings(user, { mcpServers, systemPrompt: config.systemPrompt !== null, env });
  writePlainFileSync(path.join(dir, 'settings.json'), `${JSON.stringify(settings, null, 2)}\n`);
  const promptFile = path.join(dir, SYSTEM_PROMPT_FILE);
  if (config.systemPrompt !== null) writePlainFileSync(promptFile, `${config.systemPrompt}\n`);
  else if (existsSync(promptFile)) unlinkSync(promptFile);
  for (const name of [...USER_ENTRIES, ...contextFileNames(user)]) {
    if (name === SYSTEM_PROMPT_FILE || name.includes('/')) continue;
    linkUserEntry(path.join(userDir, name), path.join(dir, name));
  }
  // Gemini also looks in its home itself for `.env` and `.agents/`.
  for (const name of ['.env', '.agents']) linkUserEntry(path.join(userBase, name), path.join(home, name));
  return { home, env: { ...env, GEMINI_CLI_HOME: home } };
}

/** The environment of a launch in the managed home, without writing anything (for finding its files). */
export function managedEnv(env: Record<string, string>, sessionDir: string): Record<string, string> {
  return { ...env, GEMINI_CLI_HOME: managedHome(sessionDir) };
}
