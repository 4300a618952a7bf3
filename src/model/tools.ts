/** Mapping the reply logic's tool intents onto the tools a client offered. */
import type { OfferedTool, ToolCall, ToolIntent } from './types.js';

/** The first offered tool (outside any namespace) whose name is one of `names`, in the order of `names`. */
export function pickTool(tools: OfferedTool[], names: string[]): OfferedTool | null {
  for (const name of names) {
    const hit = tools.find((t) => t.name === name && t.namespace === undefined);
    if (hit) return hit;
  }
  return null;
}

/** Property names of a tool's JSON-schema arguments (empty when unknown). */
export function schemaProperties(tool: OfferedTool | null): Record<string, unknown> {
  const params = tool?.parameters;
  if (params && typeof params === 'object') {
    const props = (params as Record<string, unknown>).properties;
    if (props && typeof props === 'object') return props as Record<string, unknown>;
  }
  return {};
}

/**
 * Arguments for a shell tool. The command goes under `cmd` or `command` (as an argv array when the
 * schema says so); a `description` is added when the schema has one or `withDescription` is set.
 */
export function shellArgs(tool: OfferedTool | null, command: string, defaultKey: 'cmd' | 'command', withDescription: boolean): Record<string, unknown> {
  const props = schemaProperties(tool);
  const args: Record<string, unknown> = {};
  const key = 'cmd' in props ? 'cmd' : 'command' in props ? 'command' : defaultKey;
  const prop = props[key] as Record<string, unknown> | undefined;
  args[key] = prop?.type === 'array' ? ['bash', '-lc', command] : command;
  if (withDescription || 'description' in props) args.description = `Run: ${Array.from(command).slice(0, 60).join('')}`;
  return args;
}

/** Candidate flat names under which a CLI may expose MCP tool TOOL of server SERVER (GitHub Copilot CLI: `server-tool`). */
export function mcpNameCandidates(server: string, tool: string): string[] {
  // OpenCode: `<server>_<tool>`.
  return [`mcp__${server}__${tool}`, `mcp_${server}_${tool}`, `${server}__${tool}`, `${server}-${tool}`, `${server}_${tool}`, tool];
}

/** Resolve an intent with a dialect's preferences; `shellNames[0]` and `mcpDefault` are used when nothing offered matches. */
export function resolveWith(
  intent: ToolIntent,
  tools: OfferedTool[],
  id: string,
  prefs: {
    shellNames: string[];
    shellKey: 'cmd' | 'command';
    shellDescription: boolean;
    mcpDefault: (server: string, tool: string) => { name: string; namespace?: string };
    mcpNamespaces?: boolean;
  },
): ToolCall {
  if (intent.type === 'shell') {
    const tool = pickTool(tools, prefs.shellNames);
    const name = tool?.name ?? prefs.shellNames[0] ?? 'shell';
    return { id, name, args: shellArgs(tool, intent.command, prefs.shellKey, prefs.shellDescription) };
  }
  if (prefs.mcpNamespaces) {
    const ns = `mcp__${intent.server}`;
    const hit = tools.find((t) => t.namespace === ns && t.name === intent.tool);
    if (hit) return { id, name: hit.name, namespace: ns, args: intent.args };
  }
  const flat = pickTool(tools, mcpNameCandidates(intent.server, intent.tool));
  if (flat) return { id, name: flat.name, args: intent.args };
  const def = prefs.mcpDefault(intent.server, intent.tool);
  return def.namespace !== undefined ? { id, name: def.name, namespace: def.namespace, args: intent.args } : { id, name: def.name, args: intent.args };
}
