import { promises as fs } from 'node:fs';
import path from 'node:path';
import { CalError } from '../../errors.js';
import type { ToolPolicy } from '../../handles/schema.js';
import type { SessionConfig } from '../types.js';
import { claudeConfigDir } from './home.js';

/**
 * What every launch of Claude Code shares, in a pane (`claude --session-id|--resume`) or one
 * turn at a time (`claude -p`): cal's fixed settings, the session's runtime flags and where the
 * CLI keeps the session's transcript.
 */

/**
 * Settings cal always adds: no self-update (it ran a global npm install here), no side traffic,
 * and no prompt suggestions (a forked request after every turn that nobody reads in a pane cal
 * drives; on 2.1.29 it made the next turn's answer go missing from the transcript).
 */
export const claudeEnv = {
  DISABLE_AUTOUPDATER: '1',
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  DISABLE_TELEMETRY: '1',
  DISABLE_ERROR_REPORTING: '1',
  CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION: 'false',
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
  argv.push(...permissionFlags(config.toolPolicy));
  return argv;
}

/** cal's tool policies as Claude Code permission modes (`claude --help`: --permission-mode). */
const PERMISSION_MODES: Record<string, string | null> = {
  default: null,
  'read-only': 'plan',
  'accept-edits': 'acceptEdits',
  bypass: 'bypassPermissions',
};

export const claudeToolPolicies = Object.keys(PERMISSION_MODES) as ToolPolicy[];

function permissionFlags(policy: string): string[] {
  const mode = PERMISSION_MODES[policy];
  if (mode === undefined) throw new CalError('usage', `claude-code: tool policy ${policy} has no Claude Code permission mode (known: ${Object.keys(PERMISSION_MODES).join(', ')})`);
  return mode ? ['--permission-mode', mode] : [];
}

/** The environment every launch gets: the user's, plus cal's fixed settings. */
export function launchEnv(env: Record<string, string>, config: SessionConfig): Record<string, string> {
  return { ...env, ...claudeEnv, ...(config.toolPolicy === 'bypass' ? { IS_SANDBOX: '1' } : {}) };
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
