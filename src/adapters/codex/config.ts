import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { z } from '../../util/zod.js';
import { CalError } from '../../errors.js';
import type { ToolPolicy } from '../../handles/schema.js';
import type { SessionConfig } from '../types.js';
import { readMcpServers } from '../mcp-config-file.js';

/**
 * cal's Codex settings, all as `-c key=value` overrides on the command line (the value is TOML).
 * The user's `config.toml` is never rewritten, and overrides merge into it key by key, so the
 * user's providers, MCP servers and other project entries stay in force.
 */

/** A TOML basic string. JSON's escapes are TOML's, except that TOML also escapes DEL. */
export function tomlString(value: string): string {
  return JSON.stringify(value).replace(/\u007f/g, '\\u007F');
}

export function tomlValue(value: unknown): string {
  if (typeof value === 'string') return tomlString(value);
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Array.isArray(value)) return `[${value.map(tomlValue).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined && v !== null);
    return `{${entries.map(([k, v]) => `${tomlString(k)} = ${tomlValue(v)}`).join(', ')}}`;
  }
  throw new CalError('usage', `cannot pass ${JSON.stringify(value)} to Codex as a TOML value`);
}

/** The git repository root holding `dir` (physical path), or null outside a repository. */
export function gitRoot(dir: string): string | null {
  let current = dir;
  for (;;) {
    if (existsSync(path.join(current, '.git'))) return current;
    const parent = path.dirname(current);
    if (parent === current) return null;
    current = parent;
  }
}

/**
 * Trust for the working directory and its git root (Codex asks "Trust this folder?" inside an
 * untrusted git repository). A dotted `projects."<path>".trust_level` override does not reach
 * the TUI's check on 0.169.0; an inline table does, and it merges with the user's own entries.
 */
export function trustOverride(cwd: string): string {
  const physical = safeRealpath(cwd);
  const dirs = new Set([physical]);
  const root = gitRoot(physical);
  if (root) dirs.add(root);
  return `projects=${tomlValue(Object.fromEntries([...dirs].map((d) => [d, { trust_level: 'trusted' }])))}`;
}

/**
 * Whether the user's own Codex config trusts `cwd` for the TUI: outside a git repository it never
 * asks; inside one, a `[projects."<dir>"]` table with `trust_level = "trusted"` for the folder, the
 * repository's root or a folder between them (trust on the root covers its subfolders: research
 * codex-cli.md). Read as text, table headers only: an entry written otherwise is not seen, and
 * the session is then refused rather than trusted by mistake.
 */
export function codexTrusts(configToml: string | null, cwd: string): boolean {
  const physical = safeRealpath(cwd);
  const root = gitRoot(physical);
  if (root === null) return true;
  if (configToml === null) return false;
  const trusted = new Set<string>();
  let table: string | null = null;
  for (const line of configToml.split('\n')) {
    const header = /^\s*\[\s*projects\s*\.\s*("(?:[^"\\]|\\.)*"|'[^']*')\s*\]\s*(?:#.*)?$/.exec(line);
    if (header?.[1]) {
      const quoted = header[1];
      table = quoted.startsWith("'") ? quoted.slice(1, -1) : (JSON.parse(quoted) as string);
      continue;
    }
    if (/^\s*\[/.test(line)) table = null;
    else if (table !== null && /^\s*trust_level\s*=\s*["']trusted["']\s*(?:#.*)?$/.test(line)) trusted.add(table);
  }
  for (let dir = physical; ; dir = path.dirname(dir)) {
    if (trusted.has(dir)) return true;
    if (dir === root || path.dirname(dir) === dir) return false;
  }
}

function safeRealpath(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return path.resolve(dir);
  }
}

/**
 * `default_tools_approval_mode` is Codex's own per-server key ("approve": its tools run without
 * an "Allow tool?" prompt, which would stall a pane nobody watches): kept when the file has it.
 */
const codexServerKeys = { default_tools_approval_mode: z.string().optional() };

/** `--mcp-config F` as Codex overrides: one `mcp_servers.<name>={…}` per server. */
export function mcpOverrides(file: string): string[] {
  const servers = readMcpServers(file, 'Codex', codexServerKeys);
  const out: string[] = [];
  for (const [name, server] of Object.entries(servers)) {
    if (!/^[A-Za-z0-9_-]+$/.test(name)) throw new CalError('usage', `MCP server name ${JSON.stringify(name)} in ${file}: Codex takes letters, digits, '_' and '-' only`);
    const table: Record<string, unknown> =
      'command' in server
        ? { command: server.command, args: server.args, env: server.env, cwd: server.cwd }
        : { url: server.url, http_headers: server.headers };
    if (server.default_tools_approval_mode !== undefined) table.default_tools_approval_mode = server.default_tools_approval_mode;
    out.push(`mcp_servers.${name}=${tomlValue(table)}`);
  }
  return out;
}

/** The overrides every Codex launch gets (TUI and exec alike), as `-c` argv pairs. */
export function commonOverrides(config: SessionConfig): string[] {
  const sets = [
    // No update prompt or check in a pane nobody watches.
    'check_for_update_on_startup=false',
    // The trust policy (engine/folder-trust.ts): only when the session trusts its folder.
    ...(config.trustWorkingDir !== false ? [trustOverride(config.cwd)] : []),
  ];
  if (config.systemPrompt) sets.push(`developer_instructions=${tomlString(config.systemPrompt)}`);
  sets.push(...codexPolicyOverrides(config.toolPolicy));
  if (config.mcpConfigPath) sets.push(...mcpOverrides(config.mcpConfigPath));
  const argv = sets.flatMap((s) => ['-c', s]);
  if (config.model) argv.push('--model', config.model);
  if (config.toolPolicy === 'bypass') argv.push('--dangerously-bypass-approvals-and-sandbox');
  return argv;
}

/**
 * cal's tool policies as Codex sandbox and approval settings. `-c` overrides, because
 * `codex exec resume` has no --sandbox / --ask-for-approval flags; approval "never", because a
 * prompt in a pane nobody watches would only stall the turn (a refused action goes back to the
 * model instead). `accept-edits` is the workspace-write sandbox: edits in the working directory,
 * and commands confined to it.
 */
const CODEX_POLICIES: Record<string, string[]> = {
  default: [],
  'read-only': ['sandbox_mode="read-only"', 'approval_policy="never"'],
  'accept-edits': ['sandbox_mode="workspace-write"', 'approval_policy="never"'],
  bypass: [],
};

export const codexToolPolicies = Object.keys(CODEX_POLICIES) as ToolPolicy[];

function codexPolicyOverrides(policy: string): string[] {
  const sets = CODEX_POLICIES[policy];
  if (!sets) throw new CalError('usage', `codex: tool policy ${policy} has no Codex equivalent (known: ${codexToolPolicies.join(', ')})`);
  return sets;
}
