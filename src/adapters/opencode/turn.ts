import { z } from '../../util/zod.js';
import type { ToolActivity } from '../../handles/tool-activity.js';
import type { TurnObservation, TurnObserver } from '../types.js';
import { RetryRow } from './log.js';
import { StoreRow } from './store.js';

/**
 * Reads one turn out of cal's mirror of an OpenCode session (store.ts): the user message whose
 * text parts hold ours, then the assistant messages whose `parentID` is that message. OpenCode
 * writes one assistant message per model step; a step that ends on `finish: "tool-calls"` is
 * followed by another. The turn ended when the latest of them has `time.completed` and either an
 * `error` (`MessageAbortedError`: interrupted, any other: failed) or a finish that is not
 * "tool-calls" (completed). Measured on 1.18.33 (docs/opencode.md).
 *
 * A model request that keeps failing with a status OpenCode retries leaves no record in its store
 * for about a minute; its log has one `stream error` a failed attempt, which cal mirrors as
 * `retry` rows (log.ts). The turn fails at the MAX_ATTEMPTS-th attempt since the turn's latest
 * step (as cal bounds Qwen Code's and Gemini CLI's retries), with OpenCode's error; the adapter's
 * `afterFailKeys` then stop OpenCode's own retries in the pane.
 */
export const MAX_ATTEMPTS = 3;

const MessageData = z
  .object({
    role: z.enum(['user', 'assistant']),
    parentID: z.string().optional(),
    time: z.object({ created: z.number(), completed: z.number().optional() }).passthrough(),
    finish: z.string().optional(),
    error: z.object({ name: z.string().optional(), data: z.object({ message: z.string().optional() }).passthrough().optional() }).passthrough().optional(),
  })
  .passthrough();
type MessageData = z.infer<typeof MessageData>;

const PartData = z
  .object({
    type: z.string(),
    text: z.string().optional(),
    synthetic: z.boolean().optional(),
    tool: z.string().optional(),
    state: z.object({ status: z.string().optional(), input: z.unknown().optional(), output: z.unknown().optional() }).passthrough().optional(),
  })
  .passthrough();
type PartData = z.infer<typeof PartData>;

export function normaliseForMatch(text: string): string {
  return text.replace(/\r\n?/g, '\n').trim();
}

/** A user message's own text (OpenCode's synthetic parts, such as file contents it read, left out). */
export function userText(parts: PartData[]): string {
  return parts.filter((p) => p.type === 'text' && !p.synthetic && typeof p.text === 'string').map((p) => p.text).join('\n');
}

export function parseRow(value: unknown): { row: StoreRow; message?: MessageData; part?: PartData } | null {
  const row = StoreRow.safeParse(value);
  if (!row.success) return null;
  let data: unknown;
  try {
    data = JSON.parse(row.data.data);
  } catch {
    return null;
  }
  if (row.data.kind === 'message') {
    const message = MessageData.safeParse(data);
    return message.success ? { row: row.data, message: message.data } : null;
  }
  const part = PartData.safeParse(data);
  return part.success ? { row: row.data, part: part.data } : null;
}

export class OpencodeTurnObserver implements TurnObserver {
  private readonly needle: string;
  private readonly messages = new Map<string, MessageData>();
  private readonly order: string[] = [];
  private readonly parts = new Map<string, { messageId: string; data: PartData; mcpTool?: StoreRow['mcpTool'] }>();
  private ours: string | null = null;
  private readonly retries: RetryRow[] = [];
  unknownRecords = 0;

  constructor(message: string, private readonly notBefore?: Date) {
    this.needle = normaliseForMatch(message);
  }

  feed(record: unknown): void {
    // The mirror's header (store.ts): OpenCode's, or Kilo Code CLI's (the same rows under its name).
    const kind = record !== null && typeof record === 'object' ? (record as { kind?: unknown }).kind : undefined;
    if (kind === 'opencode-mirror' || kind === 'kilo-mirror') return;
    const retry = RetryRow.safeParse(record);
    if (retry.success) {
      this.retries.push(retry.data);
      return;
    }
    const parsed = parseRow(record);
    if (!parsed) {
      this.unknownRecords++;
      return;
    }
    if (parsed.message) {
      if (!this.messages.has(parsed.row.id)) this.order.push(parsed.row.id);
      this.messages.set(parsed.row.id, parsed.message);
    } else if (parsed.part) {
      this.parts.set(parsed.row.id, { messageId: parsed.row.messageId, data: parsed.part, ...(parsed.row.mcpTool ? { mcpTool: parsed.row.mcpTool } : {}) });
    }
    if (this.ours === null) this.ours = this.findOurs();
  }

  private partsOf(messageId: string): PartData[] {
    return [...this.parts.values()].filter((p) => p.messageId === messageId).map((p) => p.data);
  }

  private findOurs(): string | null {
    const since = this.notBefore ? this.notBefore.getTime() - 2000 : -Infinity;
    for (const id of this.order) {
      const m = this.messages.get(id);
      if (!m || m.role !== 'user' || m.time.created < since) continue;
      if (normaliseForMatch(userText(this.partsOf(id))).includes(this.needle)) return id;
    }
    return null;
  }

  private replies(): { id: string; data: MessageData }[] {
    return this.order.flatMap((id) => {
      const data = this.messages.get(id);
      return data && data.role === 'assistant' && data.parentID === this.ours ? [{ id, data }] : [];
    });
  }

  /**
   * A reply's own text. Synthetic text parts are not the model's: Kilo Code CLI 7.7.7 writes a
   * transient `⠙ Initializing snapshot…` part (`synthetic: true`) into the reply while its
   * snapshot starts slowly and removes it after, but the mirror is append-only and keeps it.
   */
  private textOf(messageId: string): string {
    return this.partsOf(messageId).filter((p) => p.type === 'text' && !p.synthetic && typeof p.text === 'string').map((p) => p.text).join('');
  }

  get observation(): TurnObservation {
    if (this.ours === null) return { phase: 'waiting' };
    const turnKey = this.ours;
    const replies = this.replies();
    const last = replies.at(-1);
    if (!last || last.data.time.completed === undefined) {
      const failed = this.failedAttempts(replies);
      if (failed.length >= MAX_ATTEMPTS) {
        const error = `${failed.at(-1)?.error ?? 'the model request failed'} (OpenCode's attempt ${failed.length} failed; cal stops at ${MAX_ATTEMPTS})`;
        return { phase: 'ended', status: 'failed', turnKey, answer: null, error };
      }
      return { phase: 'running', turnKey };
    }
    const error = last.data.error;
    if (error) {
      const text = error.data?.message ?? error.name ?? 'OpenCode recorded an error';
      const status = error.name === 'MessageAbortedError' ? 'interrupted' : 'failed';
      return { phase: 'ended', status, turnKey, answer: null, error: text };
    }
    if (!last.data.finish || last.data.finish === 'tool-calls') return { phase: 'running', turnKey };
    const answer = this.textOf(last.id);
    return { phase: 'ended', status: 'completed', turnKey, answer: answer === '' ? null : answer, error: null };
  }

  /** The failed model attempts OpenCode logged since our prompt and since the turn's latest finished step. */
  private failedAttempts(replies: { data: MessageData }[]): RetryRow[] {
    const prompt = this.ours ? this.messages.get(this.ours) : undefined;
    const since = Math.max(prompt?.time.created ?? Infinity, ...replies.map((r) => r.data.time.completed ?? -Infinity));
    return this.retries.filter((r) => r.at >= since);
  }

  get partialAnswer(): string {
    if (this.ours === null) return '';
    return this.replies().map((r) => this.textOf(r.id)).filter((t) => t !== '').join('\n');
  }

  get tools(): ToolActivity[] {
    if (this.ours === null) return [];
    return this.replies().flatMap((r) =>
      [...this.parts.values()]
        .filter((p) => p.messageId === r.id && p.data.type === 'tool')
        .map(({ data: p, mcpTool: mcp }): ToolActivity => {
          const output = p.state?.output;
          const input = p.state?.input as { command?: unknown } | undefined;
          const shell = p.tool === 'bash' && !mcp;
          return {
            kind: shell ? 'shell' : mcp ? 'mcp' : 'tool',
            // A shell call is named by its command, as every adapter names it; an MCP tool by its
            // server and its own name, as cal noted them in the mirror (store.ts).
            name: shell && typeof input?.command === 'string' ? input.command : (mcp?.name ?? p.tool ?? 'tool'),
            ...(mcp ? { server: mcp.server } : {}),
            input: p.state?.input,
            ...(typeof output === 'string' ? { output } : {}),
            ...(p.state?.status ? { status: p.state.status } : {}),
          };
        }),
    );
  }
}
