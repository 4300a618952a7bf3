import { z } from '../../util/zod.js';
import type { ToolActivity } from '../../handles/tool-activity.js';
import { TranscriptTurnObserver } from '../turn-observer.js';

/**
 * Pi's session file (JSONL, an append-only tree: every entry has an 8-hex `id` and a `parentId`),
 * measured on 0.73.1 (research: gemini-pi-cli.md P3). Only the fields cal relies on are parsed.
 *
 * A turn is: a `message` entry with role `user` (our text) → assistant messages, each with a
 * `stopReason`: `toolUse` (tool calls follow as `toolResult` messages, then another assistant),
 * `stop`/`length` (the turn's final answer), `error` (`errorMessage`), `aborted` (Esc).
 */
const TextBlock = z.object({ type: z.literal('text'), text: z.string() });
export const ToolCallBlock = z.object({ type: z.literal('toolCall'), id: z.string(), name: z.string(), arguments: z.unknown().optional() });
const AnyBlock = z.object({ type: z.string() }).passthrough();

const UserMessage = z.object({
  role: z.literal('user'),
  content: z.union([z.string(), z.array(AnyBlock)]),
});

export const AssistantMessage = z.object({
  role: z.literal('assistant'),
  content: z.array(AnyBlock),
  stopReason: z.string(),
  errorMessage: z.string().optional(),
});

export const ToolResultMessage = z.object({
  role: z.literal('toolResult'),
  toolCallId: z.string(),
  toolName: z.string().optional(),
  content: z.union([z.string(), z.array(AnyBlock)]).optional(),
  isError: z.boolean().optional(),
});

const MessageEntry = z.object({
  type: z.literal('message'),
  id: z.string(),
  parentId: z.string().nullable().optional(),
  timestamp: z.string().optional(),
  message: z.object({ role: z.string() }).passthrough(),
});

export const SessionHeader = z.object({ type: z.literal('session'), id: z.string(), cwd: z.string() }).passthrough();

/** Entry types Pi writes that carry nothing a turn needs (documented in Pi's session format). */
const KnownOther = z.object({
  type: z.enum([
    'session', 'model_change', 'thinking_level_change', 'compaction', 'branch_summary', 'custom', 'custom_message',
    'label', 'session_info',
  ]),
});

export type PiRecord =
  | { kind: 'user'; id: string; text: string | null }
  | { kind: 'assistant'; id: string; message: z.infer<typeof AssistantMessage> }
  | { kind: 'toolResult'; id: string; message: z.infer<typeof ToolResultMessage> }
  | { kind: 'other' }
  | { kind: 'unknown' };

type KnownPiRecord = Exclude<PiRecord, { kind: 'unknown' }>;

export function classifyRecord(value: unknown): PiRecord {
  const entry = MessageEntry.safeParse(value);
  if (entry.success) {
    const m = entry.data.message;
    switch (m.role) {
      case 'user': {
        const user = UserMessage.safeParse(m);
        return user.success ? { kind: 'user', id: entry.data.id, text: contentText(user.data.content) } : { kind: 'unknown' };
      }
      case 'assistant': {
        const assistant = AssistantMessage.safeParse(m);
        return assistant.success ? { kind: 'assistant', id: entry.data.id, message: assistant.data } : { kind: 'unknown' };
      }
      case 'toolResult': {
        const result = ToolResultMessage.safeParse(m);
        return result.success ? { kind: 'toolResult', id: entry.data.id, message: result.data } : { kind: 'unknown' };
      }
      default:
        // Other roles (bash execution, custom messages) are Pi's own context, never a person's turn.
        return { kind: 'other' };
    }
  }
  return KnownOther.safeParse(value).success ? { kind: 'other' } : { kind: 'unknown' };
}

/** The text blocks of a content array (or a plain string), joined; null when there is none. */
export function contentText(content: string | Array<z.infer<typeof AnyBlock>> | undefined): string | null {
  if (content === undefined) return null;
  if (typeof content === 'string') return content;
  const texts: string[] = [];
  for (const block of content) {
    const text = TextBlock.safeParse(block);
    if (text.success) texts.push(text.data.text);
  }
  return texts.length ? texts.join('') : null;
}

/**
 * The text as Pi stores it: CR/CRLF become LF, a tab becomes four spaces (the TUI's editor
 * expands pasted tabs; a message in argv keeps them, so both sides are expanded), no surrounding
 * blank space (the editor trims).
 */
export function normaliseForMatch(text: string): string {
  return text.replace(/\r\n?/g, '\n').replace(/\t/g, '    ').trim();
}

export function toolFromCall(block: z.infer<typeof ToolCallBlock>): ToolActivity {
  const input = block.arguments ?? null;
  if (block.name === 'bash') {
    const command = (input as { command?: unknown } | null)?.command;
    return { kind: 'shell', name: typeof command === 'string' ? command : 'bash', input, status: 'running' };
  }
  const mcp = /^mcp__(.+?)__(.+)$/.exec(block.name);
  if (mcp) return { kind: 'mcp', server: mcp[1], name: mcp[2] ?? block.name, input, status: 'running' };
  return { kind: 'tool', name: block.name, input, status: 'running' };
}

/**
 * Follows one turn (design §5): the first user message with our text (not older than the send)
 * starts it, keyed by its entry id; an assistant message ends it by its `stopReason`: `stop` or
 * `length` → completed with that message's text, `error` → failed with Pi's `errorMessage`,
 * `aborted` → interrupted; `toolUse` goes on. A newer user message before any end means the
 * process died mid-turn (Pi writes no end record then): lost.
 */
export class PiTurnObserver extends TranscriptTurnObserver<KnownPiRecord> {
  private readonly toolIndex = new Map<string, ToolActivity>();

  protected classify(value: unknown): KnownPiRecord | null {
    const rec = classifyRecord(value);
    return rec.kind === 'unknown' ? null : rec;
  }

  protected normalise(text: string): string {
    return normaliseForMatch(text);
  }

  protected whileWaiting(rec: KnownPiRecord): void {
    if (rec.kind === 'user' && rec.text !== null && this.isOurPrompt(rec.text)) this.begin(rec.id);
  }

  protected whileRunning(rec: KnownPiRecord): void {
    switch (rec.kind) {
      case 'assistant':
        this.onAssistant(rec.message);
        return;
      case 'toolResult': {
        const tool = this.toolIndex.get(rec.message.toolCallId);
        if (tool) {
          const output = contentText(rec.message.content);
          if (output !== null) tool.output = output;
          tool.status = rec.message.isError ? 'error' : 'completed';
        }
        return;
      }
      case 'user':
        this.end('lost', null, 'a newer prompt started before this turn recorded its end');
        return;
      default:
        return;
    }
  }

  private onAssistant(message: z.infer<typeof AssistantMessage>): void {
    for (const block of message.content) {
      const call = ToolCallBlock.safeParse(block);
      if (call.success) {
        const tool = toolFromCall(call.data);
        this.tools.push(tool);
        this.toolIndex.set(call.data.id, tool);
      }
    }
    const text = contentText(message.content);
    if (text !== null) this.lastAnswer = text;
    switch (message.stopReason) {
      case 'stop':
      case 'length':
        this.end('completed', text, null);
        return;
      case 'error':
        this.end('failed', null, message.errorMessage || 'Pi recorded an error without a message');
        return;
      case 'aborted':
        this.end('interrupted', text, message.errorMessage || 'the turn was interrupted');
        return;
      default:
        // toolUse: tool results and another assistant message follow.
        return;
    }
  }
}
