import { readFileSync } from 'node:fs';

/**
 * What cal answers an ACP agent's `session/request_permission` with, by the session's tool
 * policy (nobody sits at an ACP session to be asked): `bypass` allows every call, `accept-edits`
 * allows edits and what only reads, `read-only` only what reads, and `default` (the user's own
 * CLI settings) allows nothing the agent had to ask about: asking means its settings did not
 * allow it. Each answer picks one of the options the agent offered, a `*_once` one first.
 */
export interface PermissionOption {
  optionId: string;
  kind: string;
}

/** ACP tool kinds that only read (the protocol's `read`, `search`, `think`, `fetch`). */
const READING_KINDS = new Set(['read', 'search', 'think', 'fetch']);

export function allowedByPolicy(policy: string, toolKind: string | null | undefined): boolean {
  if (policy === 'bypass') return true;
  const kind = toolKind ?? 'other';
  if (policy === 'read-only') return READING_KINDS.has(kind);
  if (policy === 'accept-edits') return READING_KINDS.has(kind) || kind === 'edit';
  return false;
}

/** The option to answer with, or null when the agent offered none of that sense (then: cancelled). */
export function pickOption(options: readonly PermissionOption[], allow: boolean): string | null {
  const order = allow ? ['allow_once', 'allow_always'] : ['reject_once', 'reject_always'];
  for (const kind of order) {
    const found = options.find((o) => o.kind === kind);
    if (found) return found.optionId;
  }
  return null;
}

/** One MCP server as ACP's `session/new` takes it. */
export type AcpMcpServer =
  | { name: string; command: string; args: string[]; env: { name: string; value: string }[] }
  | { type: 'http'; name: string; url: string; headers: { name: string; value: string }[] };

/**
 * The session's `--mcp-config` file (Claude Code's shape, checked when the session started:
 * engine/mcp-config.ts) as ACP's list of MCP servers; none without a file.
 */
export function acpMcpServers(file: string | null): AcpMcpServer[] {
  if (!file) return [];
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as { mcpServers: Record<string, { command?: string; args?: string[]; env?: Record<string, string>; url?: string; headers?: Record<string, string> }> };
  const pairs = (r: Record<string, string> | undefined) => Object.entries(r ?? {}).map(([name, value]) => ({ name, value }));
  return Object.entries(parsed.mcpServers).map(([name, s]) =>
    s.command !== undefined ? { name, command: s.command, args: s.args ?? [], env: pairs(s.env) } : { type: 'http' as const, name, url: s.url as string, headers: pairs(s.headers) },
  );
}
