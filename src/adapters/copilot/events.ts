import { z } from '../../util/zod.js';
import type { ToolActivity } from '../../handles/tool-activity.js';
import { TranscriptTurnObserver } from '../turn-observer.js';

/**
 * GitHub Copilot CLI's session store: `<COPILOT_HOME>/session-state/<session id>/events.jsonl`,
 * one session event a line (measured on 1.0.102; the binary ships the format as
 * `schemas/session-events.schema.json` in its package, docs/copilot.md). Every line is
 * `{type, data, id, timestamp, parentId}`; events the schema marks `ephemeral` (`session.idle`,
 * `assistant.idle`, deltas) never reach the file. Only the fields cal relies on are parsed.
 *
 * One user message is: `user.message` → per model call `assistant.turn_start`,
 * `assistant.message` (with `toolRequests`), `tool.execution_start` / `tool.execution_complete`
 * for each tool, `assistant.turn_end`; the call whose message asks for no tool is the last. A
 * failed request writes `assistant.turn_end` and then `session.error`; Ctrl-C writes
 * `assistant.turn_end` and then `abort`.
 */
const Envelope = z.object({
  type: z.string(),
  data: z.record(z.string(), z.unknown()),
  id: z.string().optional(),
  timestamp: z.string().optional(),
  /** Set on a sub-agent's events: never the main turn's. */
  agentId: z.string().optional(),
});

const UserMessage = z.object({
  content: z.string(),
  messageId: z.string().optional(),
  /** Set on messages the CLI injects (skills, inter-agent prompts): never a person's prompt. */
  source: z.string().optional(),
  isAutopilotContinuation: z.boolean().optional(),
});

const ToolRequest = z.object({ toolCallId: z.string(), name: z.string() }).passthrough();

const AssistantMessage = z.object({
  content: z.string(),
  toolRequests: z.array(ToolRequest).optional(),
  parentToolCallId: z.string().optional(),
});

const ToolStart = z.object({
  toolCallId: z.string(),
  toolName: z.string(),
  arguments: z.unknown().optional(),
  mcpServerName: z.string().optional(),
  mcpToolName: z.string().optional(),
  parentToolCallId: z.string().optional(),
});

const ToolComplete = z.object({
  toolCallId: z.string(),
  success: z.boolean(),
  result: z.object({ content: z.string().optional() }).passthrough().optional(),
  error: z.object({ message: z.string().optional() }).passthrough().optional(),
});

const SessionError = z.object({ message: z.string(), errorType: z.string().optional() });
const Abort = z.object({ reason: z.string() });
export const SessionStart = z.object({ sessionId: z.string(), context: z.object({ cwd: z.string() }).passthrough().optional() }).passthrough();

export type CopilotRecord =
  | { kind: 'user'; key: string | null; text: string; injected: boolean }
  | { kind: 'assistant'; message: z.infer<typeof AssistantMessage> }
  | { kind: 'toolStart'; tool: z.infer<typeof ToolStart> }
  | { kind: 'toolComplete'; result: z.infer<typeof ToolComplete> }
  | { kind: 'callEnd' }
  | { kind: 'error'; message: string }
  | { kind: 'abort'; reason: string }
  | { kind: 'shutdown' }
  | { kind: 'other' };

/** The record in cal's terms; null for a line that is no session event at all (format drift). */
export function classifyEvent(value: unknown): CopilotRecord | null {
  const env = Envelope.safeParse(value);
  if (!env.success) return null;
  const { type, data } = env.data;
  // A sub-agent's own conversation runs inside a tool call of the main turn.
  if (env.data.agentId !== undefined) return { kind: 'other' };
  const parsed = <T>(schema: z.ZodType<T>, make: (v: T) => CopilotRecord): CopilotRecord | null => {
    const r = schema.safeParse(data);
    return r.success ? make(r.data) : null;
  };
  switch (type) {
    case 'user.message':
      return parsed(UserMessage, (m) => ({ kind: 'user', key: m.messageId ?? env.data.id ?? null, text: m.content, injected: m.source !== undefined || m.isAutopilotContinuation === true }));
    case 'assistant.message':
      return parsed(AssistantMessage, (m) => (m.parentToolCallId ? { kind: 'other' } : { kind: 'assistant', message: m }));
    case 'tool.execution_start':
      return parsed(ToolStart, (t) => (t.parentToolCallId ? { kind: 'other' } : { kind: 'toolStart', tool: t }));
    case 'tool.execution_complete':
      return parsed(ToolComplete, (t) => ({ kind: 'toolComplete', result: t }));
    case 'assistant.turn_end':
      return { kind: 'callEnd' };
    case 'session.error':
      return parsed(SessionError, (e) => ({ kind: 'error', message: e.message }));
    case 'abort':
      return parsed(Abort, (a) => ({ kind: 'abort', reason: a.reason }));
    case 'session.shutdown':
      return { kind: 'shutdown' };
    default:
      return { kind: 'other' };
  }
}

/** Text as Copilot stores a prompt: LF line endings, no surrounding blank space. */
export function normaliseForMatch(text: string): string {
  return text.replace(/\r\n?/g, '\n').trim();
}

/** A tool call as cal lists it: shell commands by their command, MCP tools by server and name. */
export function toolActivity(tool: z.infer<typeof ToolStart>): ToolActivity {
  const input = tool.arguments ?? null;
  if (tool.mcpServerName) return { kind: 'mcp', server: tool.mcpServerName, name: tool.mcpToolName ?? tool.toolName, input, status: 'running' };
  if (tool.toolName === 'bash' || tool.toolName === 'powershell') {
    const command = (input as { command?: unknown } | null)?.command;
    return { kind: 'shell', name: typeof command === 'string' ? command : tool.toolName, input, status: 'running' };
  }
  return { kind: 'tool', name: tool.toolName, input, status: 'running' };
}

/**
 * How long a model call that ended with no reply waits for its `session.error` or `abort` (both
 * written in the same millisecond as the call's end, measured) before the turn fails on its own.
 */
export const END_WITHOUT_REPLY_GRACE_MS = 3000;

/**
 * Follows one turn (design §5): the user message with our text starts it, keyed by its
 * `messageId`; the end of a model call whose message asked for no tool completes it with that
 * message's text; `session.error` fails it, `abort` interrupts it. A newer prompt or the CLI's
 * own shutdown before any end means the turn was lost.
 */
export class CopilotTurnObserver extends TranscriptTurnObserver<CopilotRecord> {
  private readonly toolIndex = new Map<string, ToolActivity>();
  /** The last assistant message of the current model call asked for tools (more calls follow). */
  private wantsTools = false;
  /** The current model call wrote a message that asked for no tool (its reply). */
  private sawReply = false;
  /** The text of the current model call's messages. */
  private callText = '';
  private endedWithoutReplyAt: number | null = null;

  protected classify(value: unknown): CopilotRecord | null {
    return classifyEvent(value);
  }

  protected normalise(text: string): string {
    return normaliseForMatch(text);
  }

  protected whileWaiting(rec: CopilotRecord): void {
    if (rec.kind === 'user' && !rec.injected && this.isOurs(rec.text)) this.begin(rec.key);
  }

  protected whileRunning(rec: CopilotRecord): void {
    switch (rec.kind) {
      case 'assistant': {
        // A reply split at reasoning boundaries comes as several messages of one model call.
        const requests = rec.message.toolRequests ?? [];
        this.wantsTools = requests.length > 0;
        this.callText += rec.message.content;
        if (!this.wantsTools) this.sawReply = true;
        if (this.callText !== '') this.lastAnswer = this.callText;
        return;
      }
      case 'toolStart': {
        const tool = toolActivity(rec.tool);
        this.tools.push(tool);
        this.toolIndex.set(rec.tool.toolCallId, tool);
        return;
      }
      case 'toolComplete': {
        const tool = this.toolIndex.get(rec.result.toolCallId);
        if (!tool) return;
        const output = rec.result.success ? rec.result.result?.content : (rec.result.error?.message ?? rec.result.result?.content);
        if (output !== undefined) tool.output = output;
        tool.status = rec.result.success ? 'completed' : 'error';
        return;
      }
      case 'callEnd': {
        const text = this.callText;
        this.callText = '';
        if (this.sawReply && !this.wantsTools) this.end('completed', text, null);
        else if (!this.wantsTools) this.endedWithoutReplyAt = Date.now();
        this.sawReply = false;
        return;
      }
      case 'error':
        this.end('failed', null, rec.message);
        return;
      case 'abort':
        this.end('interrupted', this.lastAnswer, `the turn was interrupted (${rec.reason})`);
        return;
      case 'user':
        if (!rec.injected) this.end('lost', null, 'a newer prompt started before this turn recorded its end');
        return;
      case 'shutdown':
        this.end('lost', null, 'Copilot shut down before this turn recorded its end');
        return;
      default:
        return;
    }
  }

  protected override settle(now: number): void {
    if (this.endedWithoutReplyAt !== null && now - this.endedWithoutReplyAt >= END_WITHOUT_REPLY_GRACE_MS) {
      this.end('failed', null, 'Copilot ended the turn with no reply and no error');
    }
  }
}
