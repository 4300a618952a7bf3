import { z } from '../../util/zod.js';
import type { ToolActivity } from '../../handles/tool-activity.js';
import type { TurnProgress } from '../types.js';

/**
 * Agy's `--output-format stream-json` (added in 1.1.8; research §E, from its release notes and the
 * parsers of third parties, provisional): one object per line with an `event` key (or, in other
 * parsers, `type`: both are read) naming its
 * payload, `init` (the conversation id, which cannot be chosen ahead), `step_update` (a step's
 * `step_type` from a closed vocabulary, `state` ACTIVE|DONE, `text_delta` for the agent's text,
 * `tool_name`/`tool_info` for tools) and a terminal `result` (`status` "SUCCESS", `response`,
 * `error`, `usage`). `result.response` is sometimes empty after tool turns, so the agent's
 * `text_delta`s are accumulated too. There is also an error envelope.
 */
const InitEvent = z
  .object({ event: z.literal('init'), conversation_id: z.string().optional(), init: z.object({ conversation_id: z.string().optional() }).passthrough().optional() })
  .passthrough();
const StepUpdate = z
  .object({
    event: z.literal('step_update'),
    step_update: z
      .object({
        conversation_id: z.string().optional(),
        step_index: z.number().optional(),
        state: z.string().optional(),
        step_type: z.string().optional(),
        text_delta: z.string().optional(),
        tool_name: z.string().optional(),
        tool_info: z.unknown().optional(),
      })
      .passthrough(),
  })
  .passthrough();
const ResultEvent = z
  .object({
    event: z.literal('result'),
    result: z
      .object({
        conversation_id: z.string().optional(),
        status: z.string().optional(),
        response: z.string().optional(),
        error: z.union([z.string(), z.object({ message: z.string() }).passthrough()]).nullable().optional(),
      })
      .passthrough(),
  })
  .passthrough();
const ErrorEvent = z
  .object({
    event: z.string().regex(/^error$/i),
    error: z.union([z.string(), z.object({ message: z.string() }).passthrough()]).optional(),
    message: z.string().optional(),
  })
  .passthrough();

export type AgyResult = z.infer<typeof ResultEvent>['result'];

/**
 * Third-party parsers disagree whether an event's name is under `event` or `type`: an event
 * that names itself only under `type` is read as if it were under `event`.
 */
function envelope(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const record = value as Record<string, unknown>;
  if (record.event !== undefined || typeof record.type !== 'string') return value;
  return { ...record, event: record.type };
}

const ToolInfo = z.object({ name: z.string().optional(), parameters: z.unknown().optional(), output: z.unknown().optional() }).passthrough();

export class AgyStream implements TurnProgress {
  conversationId: string | null = null;
  result: AgyResult | null = null;
  readonly errors: string[] = [];
  readonly tools: ToolActivity[] = [];
  unknownEvents = 0;
  /** The agent's text by step, in step order; reset at every tool step. */
  private readonly texts = new Map<number, string>();
  private readonly toolSteps = new Map<number, ToolActivity>();
  private nextIndex = 0;

  get observation(): TurnProgress['observation'] {
    return this.conversationId ? { phase: 'running', turnKey: null } : { phase: 'waiting' };
  }

  /** The agent's text after its last tool step. */
  get partialAnswer(): string {
    return [...this.texts.values()].join('');
  }

  /** `result.response`, else the accumulated agent text. */
  get answer(): string | null {
    if (this.result?.response) return this.result.response;
    return this.partialAnswer || null;
  }

  /** Why the turn failed in the CLI's own words (result error, error envelope), or null. */
  get failure(): string | null {
    const err = this.result?.error;
    const fromResult = typeof err === 'string' ? err : (err?.message ?? '');
    if (fromResult) return fromResult;
    if (this.result && this.result.status && this.result.status !== 'SUCCESS') return `agy reported status ${this.result.status}`;
    return this.errors.at(-1) ?? null;
  }

  feed(raw: unknown): void {
    const value = envelope(raw);
    const init = InitEvent.safeParse(value);
    if (init.success) {
      this.conversationId ??= init.data.conversation_id ?? init.data.init?.conversation_id ?? null;
      return;
    }
    const step = StepUpdate.safeParse(value);
    if (step.success) {
      this.onStep(step.data.step_update);
      return;
    }
    const result = ResultEvent.safeParse(value);
    if (result.success) {
      this.result = result.data.result;
      this.conversationId ??= result.data.result.conversation_id ?? null;
      return;
    }
    const error = ErrorEvent.safeParse(value);
    if (error.success) {
      const e = error.data.error;
      this.errors.push((typeof e === 'string' ? e : e?.message) ?? error.data.message ?? JSON.stringify(value));
      return;
    }
    this.unknownEvents++;
  }

  private onStep(s: z.infer<typeof StepUpdate>['step_update']): void {
    this.conversationId ??= s.conversation_id ?? null;
    const index = s.step_index ?? this.nextIndex;
    this.nextIndex = Math.max(this.nextIndex, index + 1);
    if (s.step_type === 'agent_response' && s.text_delta) {
      this.texts.set(index, (this.texts.get(index) ?? '') + s.text_delta);
      return;
    }
    if (s.step_type !== 'tool') return;
    // Text before a tool call is a preamble: the answer is what the agent says after the last one.
    this.texts.clear();
    const info = ToolInfo.safeParse(s.tool_info);
    let tool = this.toolSteps.get(index);
    if (!tool) {
      tool = { kind: 'tool', name: s.tool_name ?? (info.success ? info.data.name : undefined) ?? 'tool', status: 'started' };
      this.toolSteps.set(index, tool);
      this.tools.push(tool);
    }
    if (info.success && info.data.parameters !== undefined) tool.input = info.data.parameters;
    if (info.success && info.data.output !== undefined) tool.output = typeof info.data.output === 'string' ? info.data.output : JSON.stringify(info.data.output);
    if (s.state === 'DONE') tool.status = 'completed';
  }
}

/** The id agy prints on exit for resuming (`agy --conversation=<id>`), when the stream had none. */
export function conversationFromExitHint(text: string): string | null {
  return /--conversation[= ]([0-9A-Za-z][\w-]{7,})/.exec(text)?.[1] ?? null;
}
