import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { CalError } from '../../errors.js';
import type { ToolPolicy } from '../../handles/schema.js';
import { readMcpServers } from '../mcp-config-file.js';
import type { LaunchRequest, SessionConfig } from '../types.js';
import { ensurePlainDirSync, writePlainFileSync } from '../../util/private-file.js';
import { eventsFile, isManagedCopilotHome } from './home.js';

/**
 * What every launch of Copilot shares, in a pane or over ACP: the session's model, MCP servers,
 * tool policy and the environment (measured on 1.0.102, `copilot --help`).
 */

/**
 * cal's tool policies as Copilot's own permission flags. Copilot asks before a tool that writes
 * or runs a command (its default); `accept-edits` allows its `write` tool; `read-only` denies
 * `write` and `shell` (deny rules win over anything allowed); `bypass` is `--allow-all` (tools,
 * paths and URLs).
 */
const COPILOT_TOOL_FLAGS: Record<ToolPolicy, string[]> = {
  default: [],
  'accept-edits': ['--allow-tool=write'],
  'read-only': ['--deny-tool=write', '--deny-tool=shell'],
  bypass: ['--allow-all'],
};

export const copilotToolPolicies = Object.keys(COPILOT_TOOL_FLAGS) as ToolPolicy[];

/**
 * In a Copilot home cal manages (demo, certify, tests), `default` also allows Copilot's `shell`
 * and `write` tools: their confirmation dialog would hold a pane nobody watches (as Gemini's
 * managed settings allow its shell tool). A user's own home keeps Copilot's own prompts.
 */
const MANAGED_DEFAULT_FLAGS = ['--allow-tool=shell', '--allow-tool=write'];

/** Refuses what Copilot cannot honour for a session (checked before anything is launched). */
export function checkConfig(config: SessionConfig): void {
  if (config.mcpConfigPath && !existsSync(config.mcpConfigPath)) {
    throw new CalError('usage', `the MCP config ${config.mcpConfigPath} does not exist`);
  }
  if (!COPILOT_TOOL_FLAGS[config.toolPolicy as ToolPolicy]) {
    throw new CalError('usage', `copilot: tool policy ${config.toolPolicy} has no Copilot equivalent (known: ${copilotToolPolicies.join(', ')})`);
  }
}

/**
 * `--mcp-config F` in Copilot's own format (`mcpServers` entries of type `local` or `http`, every
 * tool of a server the user named allowed to be offered). Written into the handle's private
 * folder and passed as `--additional-mcp-config @file`, so no `env` value lands in argv.
 */
function mcpFlags(req: LaunchRequest): string[] {
  if (!req.config.mcpConfigPath) return [];
  const servers = readMcpServers(req.config.mcpConfigPath, 'GitHub Copilot CLI');
  const out: Record<string, Record<string, unknown>> = {};
  for (const [name, server] of Object.entries(servers)) {
    if ('command' in server) {
      out[name] = { type: 'local', command: server.command, args: server.args ?? [], ...(server.env ? { env: server.env } : {}), ...(server.cwd ? { cwd: server.cwd } : {}), tools: ['*'] };
    } else {
      out[name] = { type: server.type === 'sse' ? 'sse' : 'http', url: server.url, ...(server.headers ? { headers: server.headers } : {}), tools: ['*'] };
    }
  }
  const json = JSON.stringify({ mcpServers: out });
  if (!req.sessionDir) return [`--additional-mcp-config=${json}`];
  mkdirSync(req.sessionDir, { recursive: true, mode: 0o700 });
  const file = path.join(req.sessionDir, 'copilot-mcp-config.json');
  writePlainFileSync(file, `${json}\n`);
  return [`--additional-mcp-config=@${file}`];
}

/** Model, MCP servers and tool policy as flags, the same for every launch of a session. */
export function sessionFlags(req: LaunchRequest): string[] {
  checkConfig(req.config);
  const argv: string[] = [];
  if (req.config.model) argv.push(`--model=${req.config.model}`);
  const policy = req.config.toolPolicy as ToolPolicy;
  argv.push(...mcpFlags(req), ...(policy === 'default' && isManagedCopilotHome(req.env) ? MANAGED_DEFAULT_FLAGS : COPILOT_TOOL_FLAGS[policy]));
  // Updates are the user's business; a session keeps the release it was pinned to.
  argv.push('--no-auto-update');
  return argv;
}

/**
 * The launch's environment. Copilot has no system prompt flag; it adds every custom instructions
 * file it finds to its system message, also under the folders of `COPILOT_CUSTOM_INSTRUCTIONS_DIRS`
 * (measured on 1.0.102: only `.github/instructions/*.instructions.md` there, with an `applyTo`
 * front matter). cal's system prompt is such a file in the handle's private folder, named first.
 */
export function sessionEnv(req: LaunchRequest): Record<string, string> {
  const env: Record<string, string> = { ...req.env };
  const prompt = req.config.systemPrompt;
  if (prompt === null) return env;
  if (!req.sessionDir) throw new CalError('usage', 'copilot: a system prompt needs the folder cal keeps for the session (none was given)');
  const root = path.join(req.sessionDir, 'copilot-instructions');
  const folder = path.join(root, '.github', 'instructions');
  // Each level made and checked below the session's folder: a link planted at any of them (the
  // folder is the session's, but a recursive mkdir follows links) is refused, never written through.
  mkdirSync(req.sessionDir, { recursive: true, mode: 0o700 });
  ensurePlainDirSync(folder, req.sessionDir);
  writePlainFileSync(path.join(folder, 'cal-system-prompt.instructions.md'), `---\napplyTo: "**"\n---\n${prompt}\n`);
  const own = env.COPILOT_CUSTOM_INSTRUCTIONS_DIRS;
  env.COPILOT_CUSTOM_INSTRUCTIONS_DIRS = own ? `${root},${own}` : root;
  return env;
}

/**
 * The session id of a launch: fresh → the id cal chose (`--session-id`, which creates it), resume
 * → the native id, whose event log must still exist (`--resume` of an unknown id would start a
 * new session).
 */
export function sessionIdFor(req: LaunchRequest, fresh: () => string): { id: string; flag: string } {
  if (req.mode === 'resume') {
    if (!req.sessionId) throw new CalError('internal', 'copilot resume without a session id');
    const file = eventsFile(req.env, req.sessionId);
    if (!existsSync(file)) {
      throw new CalError('resume_unavailable', `copilot session ${req.sessionId} has no event log at ${file} any more, so copilot cannot resume it (it would start a new session)`);
    }
    return { id: req.sessionId, flag: `--resume=${req.sessionId}` };
  }
  const id = req.sessionId ?? fresh();
  return { id, flag: `--session-id=${id}` };
}
