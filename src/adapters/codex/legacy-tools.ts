import { z } from '../../util/zod.js';
import type { ToolActivity } from '../../handles/tool-activity.js';

/**
 * Tool calls in the rollouts of releases that write no `item_completed` events (measured on
 * 0.100.0; every release from 0.16x writes them). There a turn's tool calls are only the
 * model-facing `response_item`s: `function_call` (`name`, `arguments` as a JSON string,
 * `call_id`) and its `function_call_output`, or `local_shell_call`. Newer releases write these
 * too, so the observer takes them only for a turn that has no `item_completed` at all.
 */
const FunctionCall = z.object({ type: z.literal('function_call'), name: z.string(), arguments: z.string().optional(), call_id: z.string() }).passthrough();
const LocalShellCall = z
  .object({ type: z.literal('local_shell_call'), call_id: z.string().nullable().optional(), action: z.object({ command: z.array(z.string()) }).passthrough() })
  .passthrough();
const CallOutput = z
  .object({ type: z.enum(['function_call_output', 'local_shell_call_output', 'custom_tool_call_output']), call_id: z.string(), output: z.unknown() })
  .passthrough();

export type LegacyToolRecord = { kind: 'legacy_call'; callId: string | null; tool: ToolActivity } | { kind: 'legacy_output'; callId: string; output: string; failed: boolean };

const SHELL_TOOLS = new Set(['shell', 'exec_command', 'shell_command', 'container.exec', 'local_shell']);

/** The legacy tool record a `response_item` payload stands for, or null. */
export function legacyToolRecord(payload: Record<string, unknown>, shellText: (argv: string[]) => string): LegacyToolRecord | null {
  const call = FunctionCall.safeParse(payload);
  if (call.success) return { kind: 'legacy_call', callId: call.data.call_id, tool: toolFromCall(call.data.name, call.data.arguments, shellText) };
  const local = LocalShellCall.safeParse(payload);
  if (local.success) {
    return { kind: 'legacy_call', callId: local.data.call_id ?? null, tool: { kind: 'shell', name: shellText(local.data.action.command), status: 'running' } };
  }
  const out = CallOutput.safeParse(payload);
  if (out.success) return { kind: 'legacy_output', callId: out.data.call_id, ...outputText(out.data.output) };
  return null;
}

function toolFromCall(name: string, rawArgs: string | undefined, shellText: (argv: string[]) => string): ToolActivity {
  let args: unknown = rawArgs ?? null;
  try {
    args = rawArgs === undefined ? null : JSON.parse(rawArgs);
  } catch {
    // not JSON: kept as the text the model sent
  }
  if (SHELL_TOOLS.has(name)) {
    const a = (args ?? {}) as { command?: unknown; cmd?: unknown };
    const command = Array.isArray(a.command) ? shellText(a.command.map(String)) : typeof a.command === 'string' ? a.command : typeof a.cmd === 'string' ? a.cmd : name;
    return { kind: 'shell', name: command, input: args, status: 'running' };
  }
  // MCP tools are offered as `<server>__<tool>` (`mcp__<server>__<tool>` in some releases).
  const mcp = /^(?:mcp__)?(.+?)__(.+)$/.exec(name);
  if (mcp) return { kind: 'mcp', server: mcp[1], name: mcp[2] ?? name, input: args, status: 'running' };
  return { kind: 'tool', name, input: args, status: 'running' };
}

/**
 * The output as the model got it: a string, a `{content, success}` object, or a JSON string:
 * `{"output": …, "metadata": {"exit_code": …}}` (the shell tool of older releases) or an MCP
 * result's content parts.
 */
function outputText(output: unknown): { output: string; failed: boolean } {
  if (typeof output === 'string') {
    try {
      const parsed = JSON.parse(output) as unknown;
      // An MCP tool's result: its content parts (measured on 0.100.0).
      if (Array.isArray(parsed)) return { output: parsed.map((p) => (typeof (p as { text?: unknown })?.text === 'string' ? (p as { text: string }).text : JSON.stringify(p))).join('\n'), failed: false };
      const shell = parsed as { output?: unknown; metadata?: { exit_code?: unknown } } | null;
      if (shell && typeof shell.output === 'string') return { output: shell.output, failed: typeof shell.metadata?.exit_code === 'number' && shell.metadata.exit_code !== 0 };
    } catch {
      // plain text
    }
    return { output, failed: false };
  }
  const o = (output ?? {}) as { content?: unknown; success?: unknown };
  if (typeof o.content === 'string') return { output: o.content, failed: o.success === false };
  return { output: JSON.stringify(output), failed: o.success === false };
}
