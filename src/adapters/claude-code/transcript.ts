import { z } from 'zod';
import type { ToolActivity } from '../../handles/tool-activity.js';
import { TranscriptTurnObserver } from '../turn-observer.js';

/**
 * Claude Code's session transcript (`~/.claude/projects/<slug>/<id>.jsonl`), measured on 2.1.328.
 * Only the fields cal relies on are parsed; everything else is passed over.
 */
export const TextBlock = z.object({ type: z.literal('text'), text: z.string() });
export const ToolUseBlock = z.object({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: z.unknown() });
export const ToolResultBlock = z.object({
  type: z.literal('tool_result'),
  tool_use_id: z.string(),
  content: z.union([z.string(), z.array(z.object({ type: z.string(), text: z.string().optional() }).passthrough())]).optional(),
  is_error: z.boolean().optional(),
});
const ContentBlock = z.union([TextBlock, ToolUseBlock, ToolResultBlock, z.object({ type: z.string() }).passthrough()]);

const UserRecord = z.object({
  type: z.literal('user'),
  promptId: z.string().optional(),
  isMeta: z.boolean().optional(),
  origin: z.object({ kind: z.string() }).passthrough().optional(),
  message: z.object({ role: z.literal('user'), content: z.union([z.string(), z.array(ContentBlock)]) }),
});

const AssistantRecord = z.object({
  type: z.literal('assistant'),
  isApiErrorMessage: z.boolean().optional(),
  message: z.object({
    id: z.string().optional(),
    content: z.array(ContentBlock),
    stop_reason: z.string().nullable().optional(),
  }),
});

const SystemRecord = z.object({ type: z.literal('system'), subtype: z.string().optional() });

const KnownOther = z.object({
  type: z.enum([
    'mode', 'permission-mode', 'atis-latch', 'file-history-snapshot', 'attachment', 'api-request-shape',
    'api-request-blob', 'api-request', 'tools-used', 'last-prompt', 'queue-operation', 'summary',
    'custom-title', 'agent-name', 'tag', 'pr-link',
  ]),
});

/**
 * The session's running cost, written as a process leaves the session (measured on 2.1.328: last
 * record of every `claude -p` run, and of a TUI that exits; a resumed TUI writes one before its
 * first prompt too). Print mode writes no `turn_duration`: after our message this is its end.
 */
const CostStateRecord = z.object({ type: z.literal('cost-state') });

export type ClaudeRecord =
  | { kind: 'user'; record: z.infer<typeof UserRecord> }
  | { kind: 'assistant'; record: z.infer<typeof AssistantRecord> }
  | { kind: 'system'; record: z.infer<typeof SystemRecord> }
  | { kind: 'processEnd' }
  | { kind: 'other' }
  | { kind: 'unknown' };

type KnownClaudeRecord = Exclude<ClaudeRecord, { kind: 'unknown' }>;

export function classifyRecord(value: unknown): ClaudeRecord {
  const user = UserRecord.safeParse(value);
  if (user.success) return { kind: 'user', record: user.data };
  const assistant = AssistantRecord.safeParse(value);
  if (assistant.success) return { kind: 'assistant', record: assistant.data };
  const system = SystemRecord.safeParse(value);
  if (system.success) return { kind: 'system', record: system.data };
  if (CostStateRecord.safeParse(value).success) return { kind: 'processEnd' };
  if (KnownOther.safeParse(value).success) return { kind: 'other' };
  return { kind: 'unknown' };
}

/** The user's own text of a user record (string content or text blocks), or null for tool results. */
export function userText(record: z.infer<typeof UserRecord>): string | null {
  const content = record.message.content;
  if (typeof content === 'string') return content;
  const texts: string[] = [];
  for (const block of content) {
    if (block.type === 'tool_result') return null;
    if (block.type === 'text' && 'text' in block && typeof block.text === 'string') texts.push(block.text);
  }
  return texts.length ? texts.join('\n') : null;
}

const INTERRUPT_PREFIX = '[Request interrupted by user';

/**
 * Text as Claude Code stores what it was given: line endings and U+2028 as LF, a tab as four
 * spaces (its input box), and without the invisible format characters it strips (measured on
 * 2.1.328: U+200B, U+2060, U+FEFF, U+202E, U+00AD are gone from the stored prompt). Both sides
 * of a match go through this, so a message containing them still finds its own record.
 */
export function normaliseForMatch(text: string): string {
  return text
    .replace(/\r\n?|\u2028/g, '\n')
    .replace(/\t/g, '    ')
    .replace(/[\p{Default_Ignorable_Code_Point}\p{Cf}]/gu, '')
    .trim();
}

export function toolFromUse(block: z.infer<typeof ToolUseBlock>): ToolActivity {
  const mcp = /^mcp__(.+?)__(.+)$/.exec(block.name);
  if (mcp) return { kind: 'mcp', server: mcp[1], name: mcp[2] ?? block.name, input: block.input };
  if (block.name === 'Bash') {
    const command = (block.input as { command?: unknown } | null)?.command;
    return { kind: 'shell', name: typeof command === 'string' ? command : 'Bash', input: block.input };
  }
  return { kind: 'tool', name: block.name, input: block.input };
}

export function resultText(block: z.infer<typeof ToolResultBlock>): string {
  if (typeof block.content === 'string') return block.content;
  return (block.content ?? []).map((c) => c.text ?? '').join('');
}

/**
 * Follows one turn: the first human user record containing our message, then the first end
 * marker after it (design §5): `system/turn_duration` → completed, an API-error assistant →
 * failed, an interrupt record → interrupted, a newer human prompt → the old turn was lost.
 * Print mode (`claude -p`, the structured transport) writes no `turn_duration`; its process
 * ends the turn with `cost-state`: completed when the last reply ended the turn (`end_turn`),
 * lost when the process left in the middle of it (after a tool call).
 */
export class ClaudeTurnObserver extends TranscriptTurnObserver<KnownClaudeRecord> {
  private readonly toolIndex = new Map<string, ToolActivity>();
  private readonly ours: string;
  private lastStop: string | null = null;

  constructor(message: string, notBefore?: Date) {
    super(message, notBefore);
    this.ours = normaliseForMatch(message);
  }

  protected classify(value: unknown): KnownClaudeRecord | null {
    const rec = classifyRecord(value);
    return rec.kind === 'unknown' ? null : rec;
  }

  protected normalise(text: string): string {
    return normaliseForMatch(text);
  }

  protected whileWaiting(rec: KnownClaudeRecord): void {
    if (rec.kind !== 'user' || rec.record.isMeta) return;
    const text = userText(rec.record);
    // Claude's own interrupt note is not a prompt, unless our message itself starts that way.
    if (text === null || (text.startsWith(INTERRUPT_PREFIX) && !this.ours.startsWith(INTERRUPT_PREFIX))) return;
    if (rec.record.origin && rec.record.origin.kind !== 'human') return;
    if (this.isOurs(text)) this.begin(rec.record.promptId ?? null);
  }

  protected whileRunning(rec: KnownClaudeRecord): void {
    switch (rec.kind) {
      case 'assistant':
        this.onAssistant(rec.record);
        return;
      case 'user':
        this.onUser(rec.record);
        return;
      case 'system':
        if (rec.record.subtype === 'turn_duration') this.end('completed', this.lastAnswer, null);
        return;
      case 'processEnd':
        // Before any reply it is a resumed TUI's start-up record, not an end.
        if (this.lastStop === null) return;
        if (this.lastStop === 'end_turn') this.end('completed', this.lastAnswer, null);
        else this.end('lost', null, 'the CLI process left the session before the turn ended');
        return;
      default:
        return;
    }
  }

  private onAssistant(record: z.infer<typeof AssistantRecord>): void {
    const text = record.message.content
      .filter((b): b is z.infer<typeof TextBlock> => b.type === 'text' && typeof (b as { text?: unknown }).text === 'string')
      .map((b) => b.text)
      .join('');
    if (record.isApiErrorMessage) {
      this.end('failed', null, text || 'the CLI recorded an API error without text');
      return;
    }
    for (const block of record.message.content) {
      const use = ToolUseBlock.safeParse(block);
      if (use.success) {
        const tool = toolFromUse(use.data);
        this.tools.push(tool);
        this.toolIndex.set(use.data.id, tool);
      }
    }
    // One response with several blocks arrives as several records with the same message id.
    if (text) this.lastAnswer = text;
    this.lastStop = record.message.stop_reason ?? null;
  }

  private onUser(record: z.infer<typeof UserRecord>): void {
    const content = record.message.content;
    if (Array.isArray(content)) {
      for (const block of content) {
        const result = ToolResultBlock.safeParse(block);
        if (result.success) {
          const tool = this.toolIndex.get(result.data.tool_use_id);
          if (tool) {
            tool.output = resultText(result.data);
            tool.status = result.data.is_error ? 'error' : 'completed';
          }
        }
      }
    }
    const text = userText(record);
    if (text === null) return;
    if (text.startsWith(INTERRUPT_PREFIX)) {
      this.end('interrupted', this.lastAnswer, 'the turn was interrupted');
      return;
    }
    const human = !record.isMeta && (!record.origin || record.origin.kind === 'human');
    if (human && record.promptId && record.promptId !== this.turnKey) {
      this.end('lost', null, 'a newer prompt started before this turn recorded its end');
    }
  }
}
