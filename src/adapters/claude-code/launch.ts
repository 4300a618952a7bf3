import fs from 'node:fs/promises';
import path from 'node:path';
import type { SessionConfig } from '../types.js';
import { claudeConfigDir } from './home.js';

/**
 * What every launch of Claude Code shares, in a pane (`claude --session-id|--resume`) or one
 * turn at a time (`claude -p`): cal's fixed settings, the session's runtime flags and where the
 * CLI keeps the session's transcript.
 */

/** Settings cal always adds: no self-update (it ran a global npm install here), no side traffic. */
export const claudeEnv = {
  DISABLE_AUTOUPDATER: '1',
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  DISABLE_TELEMETRY: '1',
  DISABLE_ERROR_REPORTING: '1',
} as const;

/** The folder name Claude Code derives from a working directory. */
export function projectSlug(cwd: string): string {
  return cwd.replace(/[^A-Za-z0-9]/g, '-');
}

/**
 * The session's runtime configuration as flags, the same for every launch of it: model, system
 * prompt, MCP config, permission mode. `--mcp-config` is variadic: the caller ends it (`--`, or
 * another flag).
 */
export function sessionFlags(config: SessionConfig): string[] {
  const argv: string[] = [];
  if (config.model) argv.push('--model', config.model);
  if (config.systemPrompt) argv.push('--append-system-prompt', config.systemPrompt);
  if (config.mcpConfigPath) argv.push('--mcp-config', config.mcpConfigPath);
  if (config.toolPolicy !== 'default') argv.push('--permission-mode', config.toolPolicy);
  return argv;
}

/** The environment every launch gets: the user's, plus cal's fixed settings. */
export function launchEnv(env: Record<string, string>, config: SessionConfig): Record<string, string> {
  return { ...env, ...claudeEnv, ...(config.toolPolicy === 'bypassPermissions' ? { IS_SANDBOX: '1' } : {}) };
}

/**
 * The transcript files that may hold session `id`: the one in the working directory's project
 * folder first, then the id in any project folder (long paths get a shortened folder name).
 * Empty when there is no projects folder at all.
 */
export async function transcriptCandidates(env: Record<string, string>, cwd: string, id: string): Promise<string[]> {
  const projects = path.join(claudeConfigDir(env), 'projects');
  const candidates = [path.join(projects, projectSlug(cwd), `${id}.jsonl`)];
  try {
    for (const dir of await fs.readdir(projects)) candidates.push(path.join(projects, dir, `${id}.jsonl`));
  } catch {
    return [];
  }
  return candidates;
}
