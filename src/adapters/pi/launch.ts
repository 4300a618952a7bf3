import { randomUUID } from '../../util/random.js';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { packagePath } from '../../util/package-root.js';
import { CalError } from '../../errors.js';
import type { ToolPolicy } from '../../handles/schema.js';
import type { LaunchRequest } from '../types.js';
import { chooseSessionFile, findSessionFile, readHeaderId, sessionFolders } from './home.js';
import { MCP_CONFIG_ENV } from './mcp-extension.js';

/**
 * What every launch of Pi shares, in a pane (`pi --session <file> <message>`) or one turn at a
 * time (`pi --mode json --session <file>`): the session file, and the session's runtime flags.
 */

/** The bridge extension: its own compiled file, which Pi loads (never part of the bundled entry). */
const MCP_EXTENSION = packagePath('dist', 'adapters', 'pi', 'mcp-extension.js');

/**
 * The session file a launch uses. resume: the file whose header carries the native id (it must
 * exist: `--session <path>` creates a missing file, a silent fresh start). fresh: the file cal
 * chose for the pending id (an absolute path kept from an earlier launch, or the file already
 * named after it), else a new file in the folder Pi itself uses for the working directory.
 */
export function sessionFileFor(req: LaunchRequest): string {
  if (req.mode === 'resume') {
    if (!req.sessionId) throw new CalError('internal', 'pi resume without a session id');
    const found = findSessionFile(req.env, req.config.cwd, req.sessionId);
    if (!found) {
      throw new CalError('resume_unavailable', `pi session ${req.sessionId} has no session file in ${sessionFolders(req.env, req.config.cwd).join(' or ')} any more, so pi cannot resume it (it would start a new session)`);
    }
    return found;
  }
  if (req.sessionId && path.isAbsolute(req.sessionId)) return req.sessionId;
  const id = req.sessionId ?? randomUUID();
  return chosenFile(req.env, req.config.cwd, id) ?? chooseSessionFile(req.env, req.config.cwd, id);
}

/** The session file cal named after `id` (chooseSessionFile) that Pi already wrote, or null. */
export function chosenFile(env: Record<string, string>, cwd: string, id: string): string | null {
  for (const folder of sessionFolders(env, cwd)) {
    let names: string[];
    try {
      names = readdirSync(folder);
    } catch {
      continue;
    }
    const name = names.find((n) => n.endsWith(`_${id}.jsonl`));
    if (name && readHeaderId(path.join(folder, name))) return path.join(folder, name);
  }
  return null;
}

/**
 * cal's tool policies for Pi, which never asks before a tool runs (its default is every tool):
 * `bypass` is that default; `read-only` is Pi's own allowlist of its reading tools (`pi --help`:
 * --tools); `accept-edits` has no equivalent (nothing in Pi can ask about commands).
 */
const PI_TOOL_FLAGS: Record<string, string[]> = {
  default: [],
  'read-only': ['--tools', 'read,grep,find,ls'],
  bypass: [],
};

export const piToolPolicies = Object.keys(PI_TOOL_FLAGS) as ToolPolicy[];

function piToolFlags(config: LaunchRequest['config']): string[] {
  const flags = PI_TOOL_FLAGS[config.toolPolicy];
  if (!flags) throw new CalError('usage', `pi: tool policy ${config.toolPolicy} has no Pi equivalent (Pi never asks before a tool runs; known: ${piToolPolicies.join(', ')})`);
  // The allowlist covers extension tools too: it would switch the MCP bridge's tools off unseen.
  if (config.toolPolicy === 'read-only' && config.mcpConfigPath) throw new CalError('usage', 'pi: --tool-policy read-only switches off every tool but read, grep, find and ls, MCP tools too: drop --mcp-config or the policy');
  return flags;
}

/**
 * Model, system prompt and MCP servers as flags and environment, the same for every launch.
 * Pi has no MCP client: cal's bridge extension (loaded by Pi's own `--extension`) starts the
 * servers of the config named in the environment.
 */
export function sessionFlags(req: LaunchRequest): { argv: string[]; env: Record<string, string> } {
  const argv: string[] = [];
  if (req.config.model) argv.push('--model', req.config.model);
  if (req.config.systemPrompt) argv.push('--append-system-prompt', req.config.systemPrompt);
  argv.push(...piToolFlags(req.config));
  const env: Record<string, string> = { ...req.env };
  delete env[MCP_CONFIG_ENV];
  if (req.config.mcpConfigPath) {
    argv.push('--extension', MCP_EXTENSION);
    env[MCP_CONFIG_ENV] = req.config.mcpConfigPath;
  }
  return { argv, env };
}
