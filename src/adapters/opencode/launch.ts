import path from 'node:path';
import { CalError } from '../../errors.js';
import type { LaunchRequest } from '../types.js';
import { readMcpServers } from '../mcp-config-file.js';
import { ensurePlainDirSync, writePlainFileSync } from '../../util/private-file.js';
import { envName, type OpencodeFlavour } from './flavour.js';

/**
 * cal's stability fields as OpenCode 1.18.33 takes them, shared by the TUI and `opencode run`:
 * `--model provider/model`; the tool policy as an agent or a flag (below); the system prompt and
 * the MCP servers as configuration in `OPENCODE_CONFIG_CONTENT`, which OpenCode merges over every
 * config file it reads (measured in the binary: loaded as a "local" config), so nothing is written
 * into the user's own OpenCode config. The system prompt goes into a file in the session's folder
 * named by `instructions` (OpenCode appends instruction files to its own prompt). Kilo Code CLI takes
 * the same flags and keys, its variable named `KILO_CONFIG_CONTENT` (the flavour's, flavour.ts).
 */

/**
 * cal's tool policies on OpenCode. Its default permission is `"*": "allow"` (measured in the
 * binary: every tool runs without asking, but `doom_loop` and `external_directory` ask), so:
 * `read-only` is OpenCode's own `plan` agent (edits denied), `accept-edits` keeps edits allowed
 * and makes shell commands ask, `bypass` is `--auto` (also approves what would still ask).
 */
export const TOOL_POLICIES = ['default', 'read-only', 'accept-edits', 'bypass'] as const;

/** `--mcp-config F` as OpenCode `mcp` entries: `local` with the command as one array, or `remote`. */
export function opencodeMcpServers(file: string, label = 'OpenCode'): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const [name, server] of Object.entries(readMcpServers(file, label))) {
    if ('command' in server) {
      out[name] = { type: 'local', command: [server.command, ...(server.args ?? [])], ...(server.env ? { environment: server.env } : {}), enabled: true };
    } else {
      out[name] = { type: 'remote', url: server.url, ...(server.headers ? { headers: server.headers } : {}), enabled: true };
    }
  }
  return out;
}

/** The names of the MCP servers a session gets (cal's file), for the mirror's header (store.ts). */
export function mcpServerNames(flavour: OpencodeFlavour, config: { mcpConfigPath: string | null }): string[] {
  return config.mcpConfigPath ? Object.keys(opencodeMcpServers(config.mcpConfigPath, flavour.label)) : [];
}

export interface OpencodeFlags {
  argv: string[];
  env: Record<string, string>;
}

/** The configuration cal adds for a session, merged over any `OPENCODE_CONFIG_CONTENT` the user set. */
function configContent(flavour: OpencodeFlavour, req: LaunchRequest): Record<string, unknown> | null {
  const { config } = req;
  const ours: Record<string, unknown> = {};
  if (config.toolPolicy === 'accept-edits') ours.permission = { edit: 'allow', bash: 'ask' };
  if (config.systemPrompt !== null || config.mcpConfigPath) {
    if (!req.sessionDir) throw new CalError('internal', `a launch of ${flavour.label} with a system prompt or MCP config needs the session folder cal owns`);
    ensurePlainDirSync(req.sessionDir, path.dirname(req.sessionDir));
  }
  if (config.systemPrompt !== null && req.sessionDir) {
    const file = path.join(req.sessionDir, `${flavour.command}-system-prompt.md`);
    writePlainFileSync(file, config.systemPrompt);
    ours.instructions = [file];
  }
  if (config.mcpConfigPath) ours.mcp = opencodeMcpServers(config.mcpConfigPath, flavour.label);
  if (Object.keys(ours).length === 0) return null;
  const name = envName(flavour, 'CONFIG_CONTENT');
  const theirs = req.env[name];
  if (!theirs) return ours;
  let parsed: unknown;
  try {
    parsed = JSON.parse(theirs);
  } catch {
    throw new CalError('usage', `${name} in the environment is not JSON, so cal cannot add the session's settings to it`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new CalError('usage', `${name} in the environment is not a JSON object`);
  return { ...(parsed as Record<string, unknown>), ...ours };
}

/** A tool policy the flavour has no equivalent for is a usage error, before anything runs. */
export function checkToolPolicy(flavour: OpencodeFlavour, toolPolicy: string): void {
  if (!(TOOL_POLICIES as readonly string[]).includes(toolPolicy)) {
    throw new CalError('usage', `${flavour.provider}: tool policy ${toolPolicy} has no ${flavour.label} equivalent (known: ${TOOL_POLICIES.join(', ')})`);
  }
}

/** Flags and environment every launch of this session gets (TUI and `<command> run`). */
export function sessionFlags(flavour: OpencodeFlavour, req: LaunchRequest): OpencodeFlags {
  const { config } = req;
  checkToolPolicy(flavour, config.toolPolicy);
  const argv: string[] = [];
  if (config.model) argv.push('--model', config.model);
  if (config.toolPolicy === 'read-only') argv.push('--agent', 'plan');
  if (config.toolPolicy === 'bypass') argv.push('--auto');
  const env = { ...req.env, ...flavour.quietEnv };
  const content = configContent(flavour, req);
  if (content) env[envName(flavour, 'CONFIG_CONTENT')] = JSON.stringify(content);
  return { argv, env };
}
