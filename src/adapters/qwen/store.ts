import { z } from '../../util/zod.js';
import type { ToolActivity } from '../../handles/tool-activity.js';
import { TranscriptTurnObserver } from '../turn-observer.js';

/**
 * Qwen Code's session file (`<runtime>/projects/<cwd slug>/chats/<session id>.jsonl`), measured
 * on 0.24.4 (docs/qwen.md). Append-only records chained by `uuid`/`parentUuid`, each with
 * `sessionId`, `timestamp`, `type` and, for conversation records, a Gemini-style `message`
 * (`{role, parts}`):
 * - `user` (`provenance: "real_user"`): the prompt as typed (the `<system-reminder>` parts Qwen
 *   sends the model are not stored);
 * - `assistant`: one record per model response once its stream ended, `parts` holding `text`
 *   (`thought: true` for reasoning) and `functionCall` parts;
 * - `tool_result`: `functionResponse` parts and `toolCallResult` (`callId`, `status`,
 *   `resultDisplay`);
 * - `system` with a `subtype`: bookkeeping (`attribution_snapshot`, `file_history_snapshot`,
 *   `ui_telemetry`, …). A failed model request is a `ui_telemetry` record whose
 *   `uiEvent["event.name"]` is `qwen-code.api_error`, one per attempt.
 * Only the fields cal relies on are parsed; everything else passes.
 */
const Part = z
  .object({
    text: z.string().optional(),
    thought: z.boolean().optional(),
    functionCall: z.object({ id: z.string().optional(), name: z.string(), args: z.unknown().optional() }).passthrough().optional(),
    functionResponse: z.object({ id: z.string().optional(), name: z.string().optional(), response: z.unknown().optional() }).passthrough().optional(),
  })
  .passthrough();

const Message = z.object({ role: z.string(), parts: z.array(Part) }).passthrough();

const Base = { uuid: z.string(), sessionId: z.string(), timestamp: z.string().optional() };

const UserRecord = z.object({ ...Base, type: z.literal('user'), provenance: z.string().optional(), message: Message }).passthrough();
const AssistantRecord = z.object({ ...Base, type: z.literal('assistant'), message: Message, usageMetadata: z.unknown().optional() }).passthrough();
const ToolResultRecord = z
  .object({
    ...Base,
    type: z.literal('tool_result'),
    message: Message.optional(),
    toolCallResult: z.object({ callId: z.string(), status: z.string().optional(), resultDisplay: z.unknown().optional() }).passthrough().optional(),
  })
  .passthrough();
const ApiError = z.object({
  'event.name': z.literal('qwen-code.api_error'),
  error_message: z.string().optional(),
  status_code: z.union([z.number(), z.string()]).optional(),
  subagent_name: z.string().optional(),
});
const ApiResponse = z.object({ 'event.name': z.literal('qwen-code.api_response'), subagent_name: z.string().optional() });
const SystemRecord = z.object({ ...Base, type: z.literal('system'), subtype: z.string().optional(), systemPayload: z.unknown().optional() }).passthrough();

export type QwenRecord =
  | { kind: 'user'; uuid: string; sessionId: string; text: string | null; human: boolean }
  | { kind: 'assistant'; uuid: string; text: string; calls: Array<{ id: string; name: string; args: unknown }>; usage: boolean }
  | { kind: 'tool_result'; uuid: string; callId: string | null; status: string | null; output: string | null }
  | { kind: 'api_error'; uuid: string; message: string; status: number | null }
  | { kind: 'api_response'; uuid: string }
  | { kind: 'system'; uuid: string };

/** The visible text of parts: every `text` part that is not reasoning, joined; null when there is none. */
export function partsText(parts: Array<z.infer<typeof Part>>): string | null {
  const texts = parts.filter((p) => typeof p.text === 'string' && p.thought !== true).map((p) => p.text as string);
  return texts.length ? texts.join('') : null;
}

function displayText(display: unknown): string | null {
  if (typeof display === 'string') return display;
  if (display && typeof display === 'object') {
    const d = display as { output?: unknown; text?: unknown };
    if (typeof d.output === 'string') return d.output;
    if (typeof d.text === 'string') return d.text;
  }
  return null;
}

export function classifyRecord(value: unknown): QwenRecord | null {
  const type = typeof value === 'object' && value !== null ? (value as { type?: unknown }).type : undefined;
  if (type === 'user') {
    const r = UserRecord.safeParse(value);
    if (!r.success) return null;
    // Prompts typed by a person are `real_user`; records the CLI injects (goal control, …) are not.
    return { kind: 'user', uuid: r.data.uuid, sessionId: r.data.sessionId, text: partsText(r.data.message.parts), human: (r.data.provenance ?? 'real_user') === 'real_user' };
  }
  if (type === 'assistant') {
    const r = AssistantRecord.safeParse(value);
    if (!r.success) return null;
    const calls = r.data.message.parts.flatMap((p) => (p.functionCall ? [{ id: p.functionCall.id ?? p.functionCall.name, name: p.functionCall.name, args: p.functionCall.args ?? {} }] : []));
    return { kind: 'assistant', uuid: r.data.uuid, text: partsText(r.data.message.parts) ?? '', calls, usage: r.data.usageMetadata !== undefined };
  }
  if (type === 'tool_result') {
    const r = ToolResultRecord.safeParse(value);
    if (!r.success) return null;
    const res = r.data.toolCallResult;
    const response = r.data.message?.parts.find((p) => p.functionResponse)?.functionResponse;
    const output = displayText(res?.resultDisplay) ?? displayText(response?.response);
    return { kind: 'tool_result', uuid: r.data.uuid, callId: res?.callId ?? response?.id ?? null, status: res?.status ?? null, output };
  }
  if (type === 'system') {
    const r = SystemRecord.safeParse(value);
    if (!r.success) return null;
    const event = (r.data.systemPayload as { uiEvent?: unknown } | undefined)?.uiEvent;
    const apiError = r.data.subtype === 'ui_telemetry' ? ApiError.safeParse(event) : null;
    // A background helper's failure (the memory extractor's) is not this turn's.
    if (apiError?.success && apiError.data.subagent_name === undefined) {
      const status = Number(apiError.data.status_code);
      return { kind: 'api_error', uuid: r.data.uuid, message: apiError.data.error_message ?? 'the model request failed', status: Number.isFinite(status) ? status : null };
    }
    const apiResponse = r.data.subtype === 'ui_telemetry' ? ApiResponse.safeParse(event) : null;
    if (apiResponse?.success && apiResponse.data.subagent_name === undefined) return { kind: 'api_response', uuid: r.data.uuid };
    return { kind: 'system', uuid: r.data.uuid };
  }
  return null;
}

/** The text as Qwen stores it: CR/CRLF become LF, no surrounding blank space. */
export function normaliseForMatch(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/[\p{Default_Ignorable_Code_Point}\p{Cf}]/gu, '')
    .trim();
}

const SHELL_TOOLS = new Set(['run_shell_command', 'shell']);

/** One Qwen tool call as cal's tool activity: shell commands by their command, MCP tools by server and name. */
export function toolFromCall(call: { name: string; args: unknown }, output: string | null, status: string | null): ToolActivity {
  const args = (call.args ?? {}) as Record<string, unknown>;
  const extra = { ...(output !== null ? { output } : {}), ...(status !== null ? { status: status === 'success' ? 'completed' : status } : {}) };
  if (SHELL_TOOLS.has(call.name)) {
    return { kind: 'shell', name: typeof args.command === 'string' ? args.command : call.name, input: call.args, ...extra };
  }
  // MCP tools are registered as `mcp__<server>__<tool>`.
  const mcp = /^mcp__([A-Za-z0-9_-]+?)__(.+)$/.exec(call.name);
  if (mcp) return { kind: 'mcp', server: mcp[1], name: mcp[2] ?? call.name, input: call.args, ...extra };
  return { kind: 'tool', name: call.name, input: call.args, ...extra };
}

/**
 * Attempts at one model request that keeps failing with a status Qwen retries (429, 5xx), each
 * recorded as an `api_error`, after which the turn is failed. Qwen itself makes 7 in 0.24.4
 * (`DEFAULT_RETRY_OPTIONS.maxAttempts`, backoff from 1.5 s doubling to 30 s: about 77 s; no
 * setting changes it). cal bounds a failing model at 3 attempts, as it caps Gemini CLI's: at the
 * third the turn fails, and the adapter's `afterFailKeys` (Escape) stop Qwen's loop in the pane.
 */
export const MAX_ATTEMPTS = 3;

/** Statuses Qwen's retry loop tries again (0.24.4): 429 and 5xx; anything else fails at once. */
function retried(status: number | null): boolean {
  return status === null || status === 429 || (status >= 500 && status < 600);
}

/**
 * Follows one turn in the session file. Qwen writes no end-of-turn record, so:
 * - our turn starts at the first human `user` record (not older than the send) holding our
 *   message; its uuid is the turn key;
 * - completed: an `assistant` record with text and no function call, of a response whose stream
 *   ended (its `qwen-code.api_response` record comes first, and it carries `usageMetadata`); one
 *   that calls tools is followed by their `tool_result` records and a later response;
 * - interrupted: an `assistant` record with neither (Escape mid-stream records the text so far,
 *   and nothing else);
 * - failed: an `api_error` with a status Qwen does not retry, or the MAX_ATTEMPTS-th in a row for
 *   one request (cal then stops Qwen's own retries, which would go on for about a minute);
 * - lost: a newer human `user` record before any end.
 */
export class QwenTurnObserver extends TranscriptTurnObserver<QwenRecord> {
  private readonly calls = new Map<string, { name: string; args: unknown; output: string | null; status: string | null }>();
  private readonly order: string[] = [];
  private failedAttempts = 0;
  private requestOpen = false;
  /** Qwen logged the end of the current response's stream (its `api_response` record). */
  private responseEnded = false;

  get awaitingModel(): boolean {
    return this.phase === 'running' && this.requestOpen;
  }

  protected classify(value: unknown): QwenRecord | null {
    return classifyRecord(value);
  }

  protected normalise(text: string): string {
    return normaliseForMatch(text);
  }

  protected whileWaiting(rec: QwenRecord): void {
    if (rec.kind === 'user' && rec.human && rec.text !== null && this.isOurs(rec.text)) {
      this.begin(rec.uuid);
      this.requestOpen = true;
    }
  }

  protected whileRunning(rec: QwenRecord): void {
    switch (rec.kind) {
      case 'api_response':
        this.responseEnded = true;
        return;
      case 'assistant': {
        this.requestOpen = false;
        this.failedAttempts = 0;
        const finished = this.responseEnded || rec.usage;
        this.responseEnded = false;
        for (const call of rec.calls) {
          if (!this.calls.has(call.id)) this.order.push(call.id);
          this.calls.set(call.id, { name: call.name, args: call.args, output: null, status: null });
        }
        this.refreshTools();
        if (rec.text.trim() !== '') this.lastAnswer = rec.text;
        if (!finished) this.end('interrupted', rec.text.trim() === '' ? null : rec.text, 'the turn was interrupted');
        else if (rec.calls.length === 0 && rec.text.trim() !== '') this.end('completed', rec.text, null);
        return;
      }
      case 'tool_result': {
        this.requestOpen = true;
        this.failedAttempts = 0;
        const call = rec.callId ? this.calls.get(rec.callId) : undefined;
        if (call) {
          call.output = rec.output;
          call.status = rec.status;
          this.refreshTools();
        }
        return;
      }
      case 'api_error':
        this.failedAttempts++;
        if (!retried(rec.status) || this.failedAttempts >= MAX_ATTEMPTS) this.end('failed', null, rec.message);
        return;
      case 'user':
        if (rec.uuid !== this.turnKey && rec.human && rec.text !== null) this.end('lost', null, 'a newer prompt started before this turn recorded its end');
        return;
      default:
        return;
    }
  }

  private refreshTools(): void {
    this.tools = this.order.map((id) => {
      const c = this.calls.get(id) as { name: string; args: unknown; output: string | null; status: string | null };
      return toolFromCall(c, c.output, c.status);
    });
  }
}
