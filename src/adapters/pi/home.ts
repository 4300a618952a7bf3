import { closeSync, openSync, readdirSync, readSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { z } from '../../util/zod.js';
import { CalError } from '../../errors.js';

/**
 * Where Pi (0.73.1) keeps its config and sessions, and the throwaway agent dir cal builds for the
 * scripted model. Research: gemini-pi-cli.md P1, P3.
 */

/** `PI_CODING_AGENT_DIR` (with a leading `~` expanded, as Pi does), else `$HOME/.pi/agent`. */
export function piAgentDir(env: Record<string, string>): string {
  const dir = env.PI_CODING_AGENT_DIR;
  if (dir) {
    if (dir === '~') return homeOf(env);
    if (dir.startsWith('~/')) return path.join(homeOf(env), dir.slice(2));
    return path.resolve(dir);
  }
  return path.join(homeOf(env), '.pi', 'agent');
}

function homeOf(env: Record<string, string>): string {
  const home = env.HOME;
  if (!home) throw new CalError('usage', 'HOME is not set: Pi keeps its config and sessions under $HOME/.pi/agent (or PI_CODING_AGENT_DIR)');
  return home;
}

/** The folder name Pi derives from a working directory (`--tmp-x-y--`). */
export function piProjectFolder(cwd: string): string {
  return `--${cwd.replace(/^[/\\]/, '').replace(/[/\\:]/g, '-')}--`;
}

/**
 * The session file cal chooses for a new session: in the folder Pi itself uses for this working
 * directory (so Pi's own `/resume` picker and `--continue` find it), named as Pi names its files
 * (`<ISO time with : and . as ->_<id>.jsonl`). `PI_CODING_AGENT_SESSION_DIR` is honoured as Pi
 * honours it (a flat folder).
 */
export function chooseSessionFile(env: Record<string, string>, cwd: string, id: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[:.]/g, '-');
  const name = `${stamp}_${id}.jsonl`;
  const flat = env.PI_CODING_AGENT_SESSION_DIR;
  if (flat) return path.join(path.resolve(flat), name);
  return path.join(piAgentDir(env), 'sessions', piProjectFolder(cwd), name);
}

/** The model name the scripted agent dir configures. */
export const SCRIPTED_PI_MODEL = 'scripted-model';

/**
 * A throwaway Pi agent dir at `<dir>/pi-agent` for cal's scripted model: provider `mock`
 * (openai-completions at `<url>/v1`, a dummy key), Pi's agent-level and SDK retries off (a
 * scripted failure settles with one request), no install telemetry, offline startup.
 */
export async function scriptedPiEnv(dir: string, modelUrl: string, env: Record<string, string>): Promise<Record<string, string>> {
  const agentDir = path.join(dir, 'pi-agent');
  await fs.mkdir(agentDir, { recursive: true, mode: 0o700 });
  const models = {
    providers: {
      mock: {
        baseUrl: `${modelUrl.replace(/\/+$/, '')}/v1`,
        api: 'openai-completions',
        apiKey: 'cal-scripted-model',
        // Session headers let the scripted model tell sessions apart (its request log's sessionKey).
        compat: { supportsDeveloperRole: false, supportsReasoningEffort: false, sendSessionAffinityHeaders: true },
        models: [{ id: SCRIPTED_PI_MODEL, contextWindow: 128000, maxTokens: 4096 }],
      },
    },
  };
  const settings = {
    defaultProvider: 'mock',
    defaultModel: SCRIPTED_PI_MODEL,
    retry: { enabled: false, provider: { maxRetries: 0 } },
    enableInstallTelemetry: false,
    quietStartup: true,
  };
  await fs.writeFile(path.join(agentDir, 'models.json'), JSON.stringify(models, null, 2) + '\n', { mode: 0o600 });
  await fs.writeFile(path.join(agentDir, 'settings.json'), JSON.stringify(settings, null, 2) + '\n', { mode: 0o600 });
  const out: Record<string, string> = { ...env, PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: '1' };
  delete out.PI_CODING_AGENT_SESSION_DIR;
  return out;
}

/** The folders cal puts new session files in for a working directory (see chooseSessionFile). */
export function sessionFolders(env: Record<string, string>, cwd: string): string[] {
  const flat = env.PI_CODING_AGENT_SESSION_DIR;
  const folders = [path.join(piAgentDir(env), 'sessions', piProjectFolder(cwd))];
  if (flat) folders.unshift(path.resolve(flat));
  return folders;
}

/** The first line of a Pi session file (its other fields are Pi's business). */
const SessionHeader = z.object({ type: z.literal('session'), id: z.string() }).passthrough();

/** The `id` of a session file's header line, or null when the file has no session header. */
export function readHeaderId(file: string): string | null {
  let fd: number | null = null;
  try {
    fd = openSync(file, 'r');
    const buf = Buffer.alloc(4096);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const first = buf.subarray(0, n).toString('utf8').split('\n')[0] ?? '';
    const header = SessionHeader.safeParse(JSON.parse(first));
    return header.success ? header.data.id : null;
  } catch {
    return null;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

/**
 * The session file whose header carries Pi's session id `id`, in the folders cal writes to for
 * this working directory; null when there is none (moved, deleted, another agent dir).
 */
export function findSessionFile(env: Record<string, string>, cwd: string, id: string): string | null {
  for (const folder of sessionFolders(env, cwd)) {
    let names: string[];
    try {
      names = readdirSync(folder).filter((n) => n.endsWith('.jsonl'));
    } catch {
      continue;
    }
    // Pi's own file names end with the id; cal's end with cal's id: check those first, then all.
    names.sort((a, b) => Number(b.includes(id)) - Number(a.includes(id)));
    for (const name of names) {
      const file = path.join(folder, name);
      if (readHeaderId(file) === id) return file;
    }
  }
  return null;
}
