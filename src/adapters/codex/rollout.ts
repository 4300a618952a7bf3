import { z } from '../../util/zod.js';
import type { ToolActivity } from '../../handles/tool-activity.js';
import { TranscriptTurnObserver } from '../turn-observer.js';
import { legacyToolRecord, type LegacyToolRecord } from './legacy-tools.js';

/**
 * Codex's rollout (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`), measured on
 * 0.169.0. Every line is `{timestamp, ordinal, type, payload}`. Only the fields cal relies on are
 * parsed; everything else is passed over. The turn lifecycle lives in `event_msg` payloads:
 * `task_started` → `item_completed`* → `task_complete` (success or `error`) | `turn_aborted`.
 */
const Envelope = z.object({
  timestamp: z.string().optional(),
  ordinal: z.number().optional(),
  type: z.string(),
  payload: z.record(z.string(), z.unknown()),
});

export const SessionMeta = z
  .object({
    id: z.string(),
    timestamp: z.string(),
    cwd: z.string(),
    originator: z.string().optional(),
    cli_version: z.string().optional(),
  })
  .passthrough();
export type SessionMeta = z.infer<typeof SessionMeta>;

const TaskStarted = z.object({ type: z.literal('task_started'), turn_id: z.string() });

const CodexErrorInfo = z.object({ message: z.string() }).passthrough();

const TaskComplete = z.object({
  type: z.literal('task_complete'),
  turn_id: z.string(),
  last_agent_message: z.string().nullable().optional(),
  error: CodexErrorInfo.nullable().optional(),
});

const TurnAborted = z.object({
  type: z.literal('turn_aborted'),
  turn_id: z.string().nullable().optional(),
  reason: z.string().nullable().optional(),
});

const ErrorEvent = z.object({ type: z.literal('error'), message: z.string() }).passthrough();

const ItemCompleted = z.object({
  type: z.literal('item_completed'),
  turn_id: z.string(),
  item: z.object({ type: z.string() }).passthrough(),
});

const TextPart = z.object({ type: z.string(), text: z.string().optional() }).passthrough();

const UserMessageItem = z.object({ type: z.literal('UserMessage'), content: z.array(TextPart) });
const AgentMessageItem = z.object({ type: z.literal('AgentMessage'), content: z.array(TextPart) });

const CommandExecutionItem = z.object({
  type: z.literal('CommandExecution'),
  command: z.union([z.array(z.string()), z.string()]),
  aggregated_output: z.string().nullable().optional(),
  exit_code: z.number().nullable().optional(),
  status: z.string().optional(),
});

const McpContent = z.object({ type: z.string(), text: z.string().optional() }).passthrough();
const McpToolCallItem = z.object({
  type: z.literal('McpToolCall'),
  server: z.string(),
  tool: z.string(),
  arguments: z.unknown().optional(),
  status: z.string().optional(),
  result: z
    .object({ content: z.array(McpContent).optional(), structured_content: z.unknown().optional() })
    .passthrough()
    .nullable()
    .optional(),
  error: z.object({ message: z.string() }).passthrough().nullable().optional(),
});

const FileChangeItem = z.object({ type: z.literal('FileChange'), status: z.string().optional() }).passthrough();
const DynamicToolCallItem = z.object({ type: z.literal('DynamicToolCall'), tool: z.string(), arguments: z.unknown().optional(), status: z.string().optional() }).passthrough();

/** A user `response_item` message: the model-facing copy of what the user typed (or context). */
const UserResponseItem = z.object({
  type: z.literal('message'),
  role: z.literal('user'),
  content: z.array(TextPart),
  internal_chat_message_metadata_passthrough: z.object({ turn_id: z.string().optional() }).passthrough().optional(),
});

const knownTopLevel = new Set([
  'session_meta', 'event_msg', 'response_item', 'world_state', 'turn_context', 'token_usage_record',
  'compacted', 'additional_tools', 'configuration_update',
]);

/** event_msg payload types seen on 0.169.0 that carry nothing a turn needs. */
const knownIgnoredEvents = new Set([
  'token_count', 'thread_settings_applied', 'item_started', 'item_updated', 'agent_message_delta',
  'agent_reasoning_delta', 'agent_message_content_delta', 'reasoning_content_delta', 'warning', 'error',
  'stream_error', 'context_compacted', 'thread_name_updated', 'background_event', 'turn_diff', 'plan_update',
  'mcp_startup_update', 'mcp_startup_complete', 'exec_command_begin', 'exec_command_end', 'mcp_tool_call_begin',
  'mcp_tool_call_end', 'patch_apply_begin', 'patch_apply_end', 'user_message', 'agent_message', 'agent_reasoning',
  'entered_review_mode', 'exited_review_mode', 'shutdown_complete', 'session_configured',
]);

export type CodexRecord =
  | { kind: 'session_meta'; meta: SessionMeta }
  | { kind: 'task_started'; turnId: string }
  | { kind: 'task_complete'; turnId: string; answer: string | null; error: string | null }
  | { kind: 'turn_aborted'; turnId: string | null; reason: string | null }
  | { kind: 'item'; turnId: string; item: { type: string } & Record<string, unknown> }
  | { kind: 'user_response_item'; text: string; turnId: string | null }
  | LegacyToolRecord
  | { kind: 'error_event'; message: string }
  | { kind: 'other' }
  | { kind: 'unknown' };

type KnownCodexRecord = Exclude<CodexRecord, { kind: 'unknown' }>;

export function classifyRecord(value: unknown): CodexRecord {
  const env = Envelope.safeParse(value);
  if (!env.success || !knownTopLevel.has(env.data.type)) return { kind: 'unknown' };
  const payload = env.data.payload;
  switch (env.data.type) {
    case 'session_meta': {
      const meta = SessionMeta.safeParse(payload);
      return meta.success ? { kind: 'session_meta', meta: meta.data } : { kind: 'unknown' };
    }
    case 'event_msg':
      return classifyEvent(payload);
    case 'response_item': {
      const user = UserResponseItem.safeParse(payload);
      if (!user.success) return legacyToolRecord(payload, shellCommandText) ?? { kind: 'other' };
      return {
        kind: 'user_response_item',
        text: partsText(user.data.content),
        turnId: user.data.internal_chat_message_metadata_passthrough?.turn_id ?? null,
      };
    }
    default:
      return { kind: 'other' };
  }
}

function classifyEvent(payload: Record<string, unknown>): CodexRecord {
  switch (payload.type) {
    case 'task_started': {
      const p = TaskStarted.safeParse(payload);
      return p.success ? { kind: 'task_started', turnId: p.data.turn_id } : { kind: 'unknown' };
    }
    case 'task_complete': {
      const p = TaskComplete.safeParse(payload);
      if (!p.success) return { kind: 'unknown' };
      return { kind: 'task_complete', turnId: p.data.turn_id, answer: p.data.last_agent_message ?? null, error: p.data.error?.message ?? null };
    }
    case 'turn_aborted': {
      const p = TurnAborted.safeParse(payload);
      return p.success ? { kind: 'turn_aborted', turnId: p.data.turn_id ?? null, reason: p.data.reason ?? null } : { kind: 'unknown' };
    }
    case 'error': {
      // What ended a turn in error, in releases whose task_complete carries no error (0.100.0).
      const p = ErrorEvent.safeParse(payload);
      return p.success ? { kind: 'error_event', message: p.data.message } : { kind: 'other' };
    }
    case 'item_completed': {
      const p = ItemCompleted.safeParse(payload);
      return p.success ? { kind: 'item', turnId: p.data.turn_id, item: p.data.item } : { kind: 'unknown' };
    }
    default:
      return typeof payload.type === 'string' && knownIgnoredEvents.has(payload.type) ? { kind: 'other' } : { kind: 'unknown' };
  }
}

function partsText(parts: z.infer<typeof TextPart>[]): string {
  return parts
    .filter((p) => typeof p.text === 'string' && (p.type === 'text' || p.type === 'input_text' || p.type === 'Text' || p.type === 'output_text'))
    .map((p) => p.text as string)
    .join('');
}

/** The text of a `UserMessage` item, or null when the item is something else. */
export function userMessageText(item: { type: string }): string | null {
  const p = UserMessageItem.safeParse(item);
  return p.success ? partsText(p.data.content) : null;
}

function agentMessageText(item: { type: string }): string | null {
  const p = AgentMessageItem.safeParse(item);
  return p.success ? partsText(p.data.content) : null;
}

/** Line endings as the TUI stores them, without the blank space pasting or a guard can add. */
export function normaliseForMatch(text: string): string {
  return text.replace(/\r\n?/g, '\n').trim();
}

/**
 * Context Codex itself injects as user messages (never what a person typed). Releases up to at
 * least 0.100.0 send the project's instructions and skills as "# AGENTS.md instructions for
 * <dir>\n\n<INSTRUCTIONS>…", before the person's first message.
 */
export function isInjectedContext(text: string): boolean {
  return (
    /^\s*<(environment_context|user_instructions|turn_aborted|user_shell_command|subagent_notification|current_time_reminder)\b/.test(text) ||
    /^# AGENTS\.md instructions for [^\n]*\n\n<INSTRUCTIONS>/.test(text)
  );
}

function mcpOutput(result: z.infer<typeof McpToolCallItem>['result']): string | undefined {
  if (!result) return undefined;
  const texts = (result.content ?? []).map((c) => (typeof c.text === 'string' ? c.text : JSON.stringify(c)));
  if (texts.length) return texts.join('\n');
  return result.structured_content === undefined || result.structured_content === null ? undefined : JSON.stringify(result.structured_content);
}

/** The tool activity an `item_completed` item stands for, or null for messages and reasoning. */
export function toolFromItem(item: { type: string }): ToolActivity | null {
  const shell = CommandExecutionItem.safeParse(item);
  if (shell.success) {
    const command = Array.isArray(shell.data.command) ? shellCommandText(shell.data.command) : shell.data.command;
    const tool: ToolActivity = { kind: 'shell', name: command, status: shell.data.status ?? 'completed' };
    if (typeof shell.data.aggregated_output === 'string') tool.output = shell.data.aggregated_output;
    return tool;
  }
  const mcp = McpToolCallItem.safeParse(item);
  if (mcp.success) {
    const tool: ToolActivity = { kind: 'mcp', server: mcp.data.server, name: mcp.data.tool, input: mcp.data.arguments ?? null, status: mcp.data.status ?? 'completed' };
    const output = mcp.data.error ? mcp.data.error.message : mcpOutput(mcp.data.result);
    if (output !== undefined) tool.output = output;
    return tool;
  }
  const patch = FileChangeItem.safeParse(item);
  if (patch.success) return { kind: 'tool', name: 'apply_patch', input: (item as Record<string, unknown>).changes ?? null, status: patch.data.status ?? 'completed' };
  const dynamic = DynamicToolCallItem.safeParse(item);
  if (dynamic.success) return { kind: 'tool', name: dynamic.data.tool, input: dynamic.data.arguments ?? null, status: dynamic.data.status ?? 'completed' };
  if (item.type === 'WebSearch') return { kind: 'tool', name: 'web_search', input: (item as Record<string, unknown>).query ?? null, status: 'completed' };
  return null;
}

/**
 * Codex runs a shell command as `[shell, -lc, script]`: the script is what the model asked for.
 */
export function shellCommandText(argv: string[]): string {
  if (argv.length === 3 && /(^|\/)(ba|z|da)?sh$/.test(argv[0] ?? '') && /^-l?c$/.test(argv[1] ?? '')) return argv[2] ?? '';
  return argv.join(' ');
}

/**
 * Follows one turn (design §5): the `task_started` whose user message is ours gives the
 * turn_id; `task_complete` for that turn_id ends it (completed, or failed when `error` is set),
 * `turn_aborted` interrupts it, and a newer `task_started` closes it as lost (the process died
 * before writing an end record, which Codex never writes after a kill).
 */
export class CodexTurnObserver extends TranscriptTurnObserver<KnownCodexRecord> {
  /** The most recent task_started before our message was seen. */
  private openTurn: string | null = null;
  /** Whether this turn has `item_completed` events (every release from 0.16x; not 0.100.0). */
  private itemized = false;
  /** The turn's tools from `item_completed`, and from the model-facing calls of older releases. */
  private readonly itemTools: ToolActivity[] = [];
  private readonly legacyTools: ToolActivity[] = [];
  private readonly legacyIndex = new Map<string, ToolActivity>();
  /** The last `error` event of this turn (older releases put no error on task_complete). */
  private lastError: string | null = null;

  protected classify(value: unknown): KnownCodexRecord | null {
    const rec = classifyRecord(value);
    return rec.kind === 'unknown' ? null : rec;
  }

  protected normalise(text: string): string {
    return normaliseForMatch(text);
  }

  protected whileRunning(rec: KnownCodexRecord): void {
    switch (rec.kind) {
      case 'task_started':
        if (rec.turnId !== this.turnKey) this.end('lost', null, 'a newer Codex turn started before this one recorded its end');
        return;
      case 'task_complete': {
        if (rec.turnId !== this.turnKey) return;
        const answer = rec.answer ?? this.lastAnswer;
        if (rec.error !== null) this.end('failed', null, rec.error);
        // Releases before 0.16x put no error on task_complete: an error event may say what
        // happened. Never an empty success (design §5).
        else if (answer === null && this.lastError !== null) this.end('failed', null, this.lastError);
        // Nor does it write an error event (measured: a request that got HTTP 500 leaves only
        // task_complete with no last_agent_message).
        else if (answer === null && !this.itemized) this.end('failed', null, 'Codex ended the turn without an answer: its model request failed (this release records no error in its rollout)');
        else this.end('completed', answer, null);
        return;
      }
      case 'error_event':
        this.lastError = rec.message;
        return;
      case 'legacy_call':
        this.legacyTools.push(rec.tool);
        if (rec.callId) this.legacyIndex.set(rec.callId, rec.tool);
        if (!this.itemized) this.tools = this.legacyTools;
        return;
      case 'legacy_output': {
        const tool = this.legacyIndex.get(rec.callId);
        if (tool) {
          tool.output = rec.output;
          tool.status = rec.failed ? 'failed' : 'completed';
        }
        return;
      }
      case 'turn_aborted':
        if (rec.turnId !== null && rec.turnId !== this.turnKey) return;
        this.end('interrupted', this.lastAnswer, `Codex aborted the turn${rec.reason ? ` (${rec.reason})` : ''}`);
        return;
      case 'item': {
        if (rec.turnId !== this.turnKey) return;
        this.itemized = true;
        this.tools = this.itemTools;
        const answer = agentMessageText(rec.item);
        if (answer !== null) {
          this.lastAnswer = answer;
          return;
        }
        const tool = toolFromItem(rec.item);
        if (tool) this.itemTools.push(tool);
        return;
      }
      default:
        return;
    }
  }

  protected whileWaiting(rec: KnownCodexRecord): void {
    if (rec.kind === 'task_started') {
      this.openTurn = rec.turnId;
      return;
    }
    if (rec.kind === 'task_complete' || rec.kind === 'turn_aborted') {
      if (rec.turnId === this.openTurn) this.openTurn = null;
      return;
    }
    let text: string | null = null;
    let turnId: string | null = null;
    if (rec.kind === 'item') {
      // A user-message item is what the user sent, whatever it starts with ("<environment_context>"
      // typed by a person is still theirs).
      text = userMessageText(rec.item);
      turnId = rec.turnId;
    } else if (rec.kind === 'user_response_item' && !isInjectedContext(rec.text)) {
      // Context Codex injects comes as user-role response items: passed over.
      text = rec.text;
      turnId = rec.turnId ?? this.openTurn;
    }
    if (text === null || turnId === null) return;
    // Only the user-message item is surely a person's prompt: a user-role response item may be
    // context of a kind cal does not know yet, so it is ours by its text alone.
    if (!(rec.kind === 'item' ? this.isOurPrompt(text) : this.isOurs(text))) return;
    this.itemized = rec.kind === 'item';
    this.begin(turnId);
  }
}
