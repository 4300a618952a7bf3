import { z } from '../../util/zod.js';
import type { ToolActivity } from '../../handles/tool-activity.js';
import type { TurnProgress } from '../types.js';

/**
 * Cursor CLI's `--output-format stream-json` (cursor.com/docs/cli/reference/output-format; field
 * names confirmed by fixtures captured from `agent 2026.08.11-e8db854`, research §D): one event per
 * line, `system`/`init` (with the chat's `session_id`), a `user` echo of the prompt, `thinking`,
 * `assistant` message segments, `tool_call` started/completed, and a terminal `result`
 * (`subtype` success|error, `is_error`, `result`: every assistant segment concatenated). On a
 * failure the stream may end without a `result`; the CLI's message is then on stderr.
 */
const TextPart = z.object({ type: z.literal('text'), text: z.string() }).passthrough();
const Message = z.object({ content: z.array(z.unknown()) }).passthrough();

const InitEvent = z.object({ type: z.literal('system'), subtype: z.literal('init'), session_id: z.string() }).passthrough();
const AssistantEvent = z.object({ type: z.literal('assistant'), message: Message, session_id: z.string().optional() }).passthrough();
const ToolCallEvent = z
  .object({
    type: z.literal('tool_call'),
    subtype: z.enum(['started', 'completed']),
    call_id: z.string(),
    tool_call: z.record(z.string(), z.object({ args: z.unknown().optional(), result: z.unknown().optional() }).passthrough()),
  })
  .passthrough();
const ResultEvent = z
  .object({
    type: z.literal('result'),
    subtype: z.string().optional(),
    is_error: z.boolean(),
    result: z.string().optional(),
    session_id: z.string().optional(),
  })
  .passthrough();
/** Known kinds cal has no use for (prompt echo, thinking, lifecycle), so they are not counted unknown. */
const OtherKnown = z.object({ type: z.enum(['user', 'thinking', 'system', 'retry', 'connection', 'interaction_query']) }).passthrough();

export type CursorResult = z.infer<typeof ResultEvent>;

/** Follows one turn's event stream: the chat id, the answer so far, the tools, the result. */
export class CursorStream implements TurnProgress {
  sessionId: string | null = null;
  result: CursorResult | null = null;
  readonly tools: ToolActivity[] = [];
  unknownEvents = 0;
  /** Assistant text since the last tool call: the final answer once the turn ends. */
  private segment = '';
  private readonly byCallId = new Map<string, ToolActivity>();

  get observation(): TurnProgress['observation'] {
    return this.sessionId ? { phase: 'running', turnKey: null } : { phase: 'waiting' };
  }

  get partialAnswer(): string {
    return this.segment;
  }

  /**
   * The answer: the assistant's text after its last tool call (the text before a tool call is a
   * preamble, which `result.result` also carries), else `result.result`.
   */
  get answer(): string | null {
    if (this.segment) return this.segment;
    return this.result?.result ?? null;
  }

  feed(value: unknown): void {
    const init = InitEvent.safeParse(value);
    if (init.success) {
      this.sessionId ??= init.data.session_id;
      return;
    }
    const assistant = AssistantEvent.safeParse(value);
    if (assistant.success) {
      const text = assistant.data.message.content.flatMap((c) => {
        const part = TextPart.safeParse(c);
        return part.success ? [part.data.text] : [];
      });
      this.segment += text.join('');
      return;
    }
    const tool = ToolCallEvent.safeParse(value);
    if (tool.success) {
      this.onTool(tool.data);
      return;
    }
    const result = ResultEvent.safeParse(value);
    if (result.success) {
      this.result = result.data;
      if (result.data.session_id) this.sessionId ??= result.data.session_id;
      return;
    }
    if (!OtherKnown.safeParse(value).success) this.unknownEvents++;
  }

  private onTool(ev: z.infer<typeof ToolCallEvent>): void {
    const [key, call] = Object.entries(ev.tool_call)[0] ?? [];
    if (!key || !call) return;
    if (ev.subtype === 'started') {
      // Text before a tool call is a preamble; the answer is what comes after the last one.
      this.segment = '';
      const activity = toolActivity(key, call.args);
      this.tools.push(activity);
      this.byCallId.set(ev.call_id, activity);
      return;
    }
    let activity = this.byCallId.get(ev.call_id);
    if (!activity) {
      activity = toolActivity(key, call.args);
      this.tools.push(activity);
      this.segment = '';
    }
    applyOutcome(activity, call.result);
  }
}

const Shell = z.object({ command: z.string() }).passthrough();
const Outcome = z.record(z.string(), z.unknown());
const ShellSuccess = z.object({ stdout: z.string().optional(), stderr: z.string().optional() }).passthrough();
const Reason = z.object({ reason: z.string() }).passthrough();
const ErrorText = z.object({ error: z.string() }).passthrough();
const McpArgs = z.object({ name: z.string().optional(), toolName: z.string().optional(), providerIdentifier: z.string().optional() }).passthrough();

/** `shellToolCall` → a shell tool, `mcpToolCall` → an MCP tool, any other `<x>ToolCall` → tool `<x>`. */
function toolActivity(key: string, args: unknown): ToolActivity {
  const kind = key.replace(/ToolCall$/, '');
  if (kind === 'shell') {
    const shell = Shell.safeParse(args);
    return { kind: 'shell', name: shell.success ? shell.data.command : 'shell', input: args ?? null, status: 'started' };
  }
  if (kind === 'mcp') {
    const mcp = McpArgs.safeParse(args);
    const name = (mcp.success && (mcp.data.toolName ?? mcp.data.name)) || 'mcp';
    const server = mcp.success ? mcp.data.providerIdentifier : undefined;
    return { kind: 'mcp', name, ...(server ? { server } : {}), input: args ?? null, status: 'started' };
  }
  return { kind: 'tool', name: kind, input: args ?? null, status: 'started' };
}

/** A completed call's `result` has exactly one outcome key (success, failure, rejected, error, …). */
function applyOutcome(activity: ToolActivity, result: unknown): void {
  const outcome = Outcome.safeParse(result);
  if (!outcome.success) {
    activity.status = 'completed';
    return;
  }
  const [status, detail] = Object.entries(outcome.data)[0] ?? ['completed', undefined];
  activity.status = status;
  if (activity.kind === 'shell' && status === 'success') {
    const out = ShellSuccess.safeParse(detail);
    if (out.success && out.data.stdout !== undefined) activity.output = out.data.stdout;
    return;
  }
  const reason = Reason.safeParse(detail);
  if (reason.success) {
    activity.output = reason.data.reason;
    return;
  }
  const error = ErrorText.safeParse(detail);
  if (error.success) activity.output = error.data.error;
}
