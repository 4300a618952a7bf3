import { z } from '../../util/zod.js';
import type { ToolActivity } from '../../handles/tool-activity.js';
import { TranscriptTurnObserver } from '../turn-observer.js';

/**
 * Gemini CLI's session file (`~/.gemini/tmp/<slug>/chats/session-<minute>-<id8>.jsonl`),
 * measured on 0.61.0. It is an operation log, replayed in order: a header line, `$set` patches
 * (a `$set.messages` array replaces the whole message list), message records upserted by `id`,
 * and `$rewindTo` (drop that message and everything after it). Only the fields cal relies on are
 * parsed; everything else is passed over.
 */
const TextPart = z.object({ text: z.string() }).passthrough();
const Part = z.union([TextPart, z.object({}).passthrough()]);

const ToolCall = z
  .object({
    id: z.string(),
    name: z.string(),
    args: z.unknown().optional(),
    result: z.unknown().optional(),
    status: z.string().optional(),
    resultDisplay: z.unknown().optional(),
    displayName: z.string().optional(),
  })
  .passthrough();

const MessageBase = {
  id: z.string(),
  timestamp: z.string().optional(),
};

const UserRecord = z.object({ ...MessageBase, type: z.literal('user'), content: z.union([z.string(), z.array(Part)]) }).passthrough();
const GeminiRecord = z
  .object({ ...MessageBase, type: z.literal('gemini'), content: z.union([z.string(), z.array(Part)]), toolCalls: z.array(ToolCall).optional() })
  .passthrough();
const NoteRecord = z.object({ ...MessageBase, type: z.enum(['info', 'error', 'warning']), content: z.union([z.string(), z.array(Part)]) }).passthrough();
const Header = z.object({ sessionId: z.string(), projectHash: z.string() }).passthrough();
const SetPatch = z.object({ $set: z.record(z.string(), z.unknown()) });
const RewindTo = z.object({ $rewindTo: z.string() });

export type GeminiRecordKind =
  | { kind: 'user'; record: z.infer<typeof UserRecord> }
  | { kind: 'gemini'; record: z.infer<typeof GeminiRecord> }
  | { kind: 'note'; record: z.infer<typeof NoteRecord> }
  | { kind: 'header'; sessionId: string }
  | { kind: 'set'; keys: string[] }
  | { kind: 'rewind'; id: string }
  | { kind: 'unknown' };

type KnownGeminiRecord = Exclude<GeminiRecordKind, { kind: 'unknown' }>;

export function classifyRecord(value: unknown): GeminiRecordKind {
  const rewind = RewindTo.safeParse(value);
  if (rewind.success) return { kind: 'rewind', id: rewind.data.$rewindTo };
  const set = SetPatch.safeParse(value);
  if (set.success) return { kind: 'set', keys: Object.keys(set.data.$set) };
  const type = typeof value === 'object' && value !== null ? (value as { type?: unknown }).type : undefined;
  if (type === 'user') {
    const user = UserRecord.safeParse(value);
    return user.success ? { kind: 'user', record: user.data } : { kind: 'unknown' };
  }
  if (type === 'gemini') {
    const gemini = GeminiRecord.safeParse(value);
    return gemini.success ? { kind: 'gemini', record: gemini.data } : { kind: 'unknown' };
  }
  if (type === 'info' || type === 'error' || type === 'warning') {
    const note = NoteRecord.safeParse(value);
    return note.success ? { kind: 'note', record: note.data } : { kind: 'unknown' };
  }
  if (type === undefined) {
    const header = Header.safeParse(value);
    if (header.success) return { kind: 'header', sessionId: header.data.sessionId };
  }
  return { kind: 'unknown' };
}

/** The text of a content value (a string, or parts with `text`); null when it holds no text part (tool results). */
export function contentText(content: string | Array<Record<string, unknown>>): string | null {
  if (typeof content === 'string') return content;
  const texts = content.filter((p): p is { text: string } => typeof p.text === 'string').map((p) => p.text);
  return texts.length ? texts.join('\n') : null;
}

/** The text as the TUI stores it: CR/CRLF become LF, no surrounding blank space. */
export function normaliseForMatch(text: string): string {
  // Invisible format characters (U+200B, U+FEFF, …) are dropped on both sides of a match: a
  // message that starts with one reached the model without it and cal never found its record
  // (measured on 0.61.0: the turn ran, cal timed out).
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/[\p{Default_Ignorable_Code_Point}\p{Cf}]/gu, '')
    .trim();
}

/** The message Gemini CLI records when Escape cancels a running request. */
export const CANCELLED = 'Request cancelled.';

/**
 * How Gemini CLI words a stop of the agent (0.61.0): a tool whose hook returned `"continue":
 * false` fails with `Agent execution stopped by hook: <reason>` (its error type
 * `stop_execution`), after which the CLI sends nothing more to the model, and the TUI then
 * notes `Agent execution stopped: <reason>` (an `info` record; also for a stop by a model hook).
 * Headless, the session file simply ends on the failed tool call.
 */
export const STOPPED = 'Agent execution stopped';

/**
 * The reason a tool call stopped the agent, or null when it did not (see STOPPED): in its display
 * text, or, where a release records no display text (or an object), in the error it sent back.
 */
function stopOf(call: z.infer<typeof ToolCall>): string | null {
  if (call.status !== 'error') return null;
  for (const text of [call.resultDisplay, responseError(call)]) {
    if (typeof text === 'string' && text.trim().startsWith(STOPPED)) return text.trim();
  }
  return null;
}

/** The `error` of the function response a tool call sent back to the model, if any. */
function responseError(call: z.infer<typeof ToolCall>): string | undefined {
  if (!Array.isArray(call.result)) return undefined;
  for (const part of call.result) {
    const error = (part as { functionResponse?: { response?: { error?: unknown } } } | null)?.functionResponse?.response?.error;
    if (typeof error === 'string') return error;
  }
  return undefined;
}

/**
 * Gemini CLI's tool for its own topic notes, which its cancel rule leaves out (0.61.0's
 * useGeminiStream: a reply whose other tool calls were all cancelled is cancelled too).
 */
const TOPIC_TOOLS = new Set(['update_topic', 'Update Topic Context']);

/**
 * Whether every tool call of a reply was cancelled (the user denied it, or Escape during it):
 * Gemini CLI then sends the model nothing more and the turn is over (0.61.0: `allToolsCancelled`
 * in useGeminiStream, which also notes "Request cancelled." unless an Escape already did; a
 * headless run ends on the cancellation). Tool calls are recorded only once completed, so the
 * status is final.
 */
function allCancelled(calls: readonly z.infer<typeof ToolCall>[]): boolean {
  const own = calls.filter((c) => !TOPIC_TOOLS.has(c.name));
  const considered = own.length > 0 ? own : calls;
  return considered.length > 0 && considered.every((c) => c.status === 'cancelled');
}

const SHELL_TOOLS = new Set(['run_shell_command', 'shell']);

function toolOutput(call: z.infer<typeof ToolCall>): string | undefined {
  if (typeof call.resultDisplay === 'string') return call.resultDisplay;
  // The function response the CLI sent back to the model: `[{functionResponse: {response: {output}}}]`.
  if (Array.isArray(call.result)) {
    for (const part of call.result) {
      const response = (part as { functionResponse?: { response?: Record<string, unknown> } } | null)?.functionResponse?.response;
      if (response) {
        for (const key of ['output', 'llmContent', 'content', 'error']) {
          const v = response[key];
          if (typeof v === 'string') return v;
        }
      }
    }
  }
  return undefined;
}

const SHELL_LABELS = /^(?:Output|Error|Exit Code|Signal|Background PIDs|Process Group PGID|Directory|Command):/;

/**
 * The command's own output from what the shell tool sent the model (0.61.0):
 * `<untrusted_context>\nOutput: <text>\nExit Code: 1\nProcess Group PGID: 123\n</untrusted_context>`.
 * Anything of another shape is returned as it is.
 */
export function shellOutput(text: string): string {
  const lines = text.replace(/^\s*<untrusted_context>\n?/, '').replace(/\n?<\/untrusted_context>\s*$/, '').split('\n');
  const start = lines.findIndex((l) => l.startsWith('Output:'));
  if (start < 0) return text;
  const out = [(lines[start] as string).slice('Output:'.length).replace(/^ /, '')];
  for (const line of lines.slice(start + 1)) {
    if (SHELL_LABELS.test(line)) break;
    out.push(line);
  }
  const joined = out.join('\n');
  return joined === '(empty)' ? '' : joined;
}

function toolStatus(status: string | undefined): string | undefined {
  if (status === 'success') return 'completed';
  return status;
}

/** One Gemini tool call as cal's tool activity: shell commands by their command, MCP tools by server and name. */
export function toolFromCall(call: z.infer<typeof ToolCall>): ToolActivity {
  const args = (call.args ?? {}) as Record<string, unknown>;
  const output = toolOutput(call);
  const status = toolStatus(call.status);
  const extra = { ...(output !== undefined ? { output } : {}), ...(status !== undefined ? { status } : {}) };
  if (SHELL_TOOLS.has(call.name)) {
    const command = typeof args.command === 'string' ? args.command : call.name;
    const shellOut = output !== undefined ? shellOutput(output) : undefined;
    return { kind: 'shell', name: command, input: call.args, ...extra, ...(shellOut !== undefined ? { output: shellOut } : {}) };
  }
  // MCP tools are registered as `mcp_<server>_<tool>` (0.61.0); older builds used `<server>__<tool>`.
  const mcp = /^mcp_([A-Za-z0-9-]+)_(.+)$/.exec(call.name) ?? /^([A-Za-z0-9_-]+?)__(.+)$/.exec(call.name);
  if (mcp) return { kind: 'mcp', server: mcp[1], name: mcp[2] ?? call.name, input: call.args, ...extra };
  return { kind: 'tool', name: call.name, input: call.args, ...extra };
}

/**
 * Follows one turn in the operation log. Gemini CLI writes no end-of-turn marker, so:
 * - our turn starts at the first `user` record (not older than the send) whose text holds our
 *   message; its id is the turn key;
 * - completed: a `gemini` record with non-empty text and no tool calls (the CLI writes a reply
 *   record once, when its stream has ended; a reply that calls tools is written with empty text
 *   and then rewritten, same id, with `toolCalls`, and the final answer comes in a later record);
 * - failed: an `error` record (an API error the CLI gave up on, e.g. HTTP 400), or a tool call
 *   that stopped the agent (a hook's `"continue": false`: the CLI asks the model nothing more,
 *   see STOPPED), or the TUI's note of such a stop;
 * - interrupted: the `info` record "Request cancelled." (Escape), a reply whose tool calls were
 *   all cancelled (a denied or interrupted tool: the CLI asks the model nothing more), or a
 *   `$rewindTo` of our message;
 * - lost: a newer human `user` record, or a new header (the CLI was relaunched) before any end.
 */
export class GeminiTurnObserver extends TranscriptTurnObserver<KnownGeminiRecord> {
  private readonly toolIndex = new Map<string, ToolActivity>();
  private readonly toolOrder: string[] = [];
  /** The last record of the turn is a request to the model (our prompt or a tool result), not a reply. */
  private requestOpen = false;

  /**
   * While true, the CLI is waiting on the model: no tool runs and no tool confirmation is up (a
   * reply that calls tools is recorded, with empty text, before its tools run or ask).
   */
  get awaitingModel(): boolean {
    return this.observation.phase === 'running' && this.requestOpen;
  }

  protected classify(value: unknown): KnownGeminiRecord | null {
    const rec = classifyRecord(value);
    return rec.kind === 'unknown' ? null : rec;
  }

  protected normalise(text: string): string {
    return normaliseForMatch(text);
  }

  protected whileWaiting(rec: KnownGeminiRecord): void {
    if (rec.kind !== 'user') return;
    const text = contentText(rec.record.content as string | Array<Record<string, unknown>>);
    if (text !== null && this.isOurPrompt(text)) {
      this.begin(rec.record.id);
      this.requestOpen = true;
    }
  }

  protected whileRunning(rec: KnownGeminiRecord): void {
    switch (rec.kind) {
      case 'gemini':
        this.onGemini(rec.record);
        return;
      case 'note':
        this.onNote(rec.record);
        return;
      case 'user': {
        if (rec.record.id === this.turnKey) return;
        const text = contentText(rec.record.content as string | Array<Record<string, unknown>>);
        // A tool result goes back to the model as a user record without text: part of this turn.
        if (text !== null) this.end('lost', null, 'a newer prompt started before this turn recorded its end');
        else this.requestOpen = true;
        return;
      }
      case 'header':
        this.end('lost', null, 'the CLI was relaunched before this turn recorded its end');
        return;
      case 'rewind':
        if (rec.id === this.turnKey) this.end('interrupted', this.lastAnswer, 'the turn was rewound');
        return;
      default:
        return;
    }
  }

  private onGemini(record: z.infer<typeof GeminiRecord>): void {
    this.requestOpen = false;
    for (const call of record.toolCalls ?? []) {
      if (!this.toolIndex.has(call.id)) this.toolOrder.push(call.id);
      this.toolIndex.set(call.id, toolFromCall(call));
    }
    // Gemini rewrites a record under the same id: tools keep the order they first appeared in.
    this.tools = this.toolOrder.map((id) => this.toolIndex.get(id) as ToolActivity);
    const stop = (record.toolCalls ?? []).map(stopOf).find((reason) => reason !== null);
    if (stop) {
      this.end('failed', null, stop);
      return;
    }
    if (allCancelled(record.toolCalls ?? [])) {
      this.end('interrupted', this.lastAnswer, 'the turn was interrupted: its tool calls were cancelled');
      return;
    }
    const text = contentText(record.content as string | Array<Record<string, unknown>>) ?? '';
    if (text.trim() === '') return;
    this.lastAnswer = text;
    if ((record.toolCalls ?? []).length === 0) this.end('completed', text, null);
  }

  private onNote(record: z.infer<typeof NoteRecord>): void {
    const text = contentText(record.content as string | Array<Record<string, unknown>>) ?? '';
    if (record.type === 'error') this.end('failed', null, text.trim() || 'Gemini CLI recorded an error without text');
    else if (record.type === 'info' && text.startsWith(STOPPED)) this.end('failed', null, text.trim());
    else if (record.type === 'info' && text.trim() === CANCELLED) this.end('interrupted', this.lastAnswer, 'the turn was interrupted');
  }
}
