import { z } from '../../util/zod.js';
import { CalError } from '../../errors.js';
import type { ToolActivity } from '../../handles/tool-activity.js';
import type { StructuredRunRequest, StructuredTurnResult } from '../types.js';
import { cliMissingIfUnstarted, lastStderrLine, runJsonlProcess } from '../structured-process.js';
import { toolFromCall } from './store.js';

/**
 * Structured transport: one headless `qwen --output-format stream-json` process per turn, the
 * message on stdin as one `--input-format stream-json` user line (no argv size limit, no flag
 * parsing of the message, its text kept byte for byte), `--session-id <uuid>` on the first turn and
 * `--resume <uuid>` after. Measured on 0.24.4 (docs/qwen.md): the stream opens with
 * `system/init` (session_id), carries each model response as one `assistant` event (`content`
 * of `text` and `tool_use` blocks) and each tool result as a `user` event (`tool_result`
 * blocks), and ends with `result`: `is_error: false` and the answer in `result`, or
 * `is_error: true` and `error.message` (a model that kept failing: `[API Error: 500 …]`, after
 * Qwen's 7 attempts). Qwen exits 0 either way; an id it does not hold exits 1 before any event
 * ("No saved session found with ID …").
 */
const ContentBlock = z
  .object({
    type: z.string(),
    text: z.string().optional(),
    id: z.string().optional(),
    name: z.string().optional(),
    input: z.unknown().optional(),
    tool_use_id: z.string().optional(),
    is_error: z.boolean().optional(),
    content: z.unknown().optional(),
  })
  .passthrough();

const StreamEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('system'), subtype: z.string().optional(), session_id: z.string().optional() }).passthrough(),
  z.object({ type: z.literal('assistant'), parent_tool_use_id: z.string().nullable().optional(), message: z.object({ content: z.array(ContentBlock) }).passthrough() }).passthrough(),
  z.object({ type: z.literal('user'), parent_tool_use_id: z.string().nullable().optional(), message: z.object({ content: z.union([z.string(), z.array(ContentBlock)]) }).passthrough() }).passthrough(),
  z.object({ type: z.literal('stream_event') }).passthrough(),
  z
    .object({
      type: z.literal('result'),
      is_error: z.boolean(),
      session_id: z.string().optional(),
      result: z.string().optional(),
      error: z.object({ message: z.string() }).passthrough().optional(),
    })
    .passthrough(),
]);

function blockText(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    const texts = content.filter((b): b is { text: string } => typeof (b as { text?: unknown })?.text === 'string').map((b) => b.text);
    return texts.length ? texts.join('') : undefined;
  }
  return undefined;
}

/** Follows `qwen --output-format stream-json` events one at a time. */
export class QwenStreamReader {
  sessionId: string | null = null;
  ended: 'completed' | 'failed' | null = null;
  error: string | null = null;
  unknownEvents = 0;
  private resultText: string | null = null;
  private text = '';
  private readonly calls = new Map<string, { name: string; args: unknown; output: string | null; status: string | null }>();
  private readonly order: string[] = [];

  feed(value: unknown): void {
    const parsed = value === undefined ? null : StreamEvent.safeParse(value);
    if (!parsed?.success) {
      this.unknownEvents++;
      return;
    }
    const e = parsed.data;
    switch (e.type) {
      case 'system':
        if (e.subtype === 'init' && e.session_id) this.sessionId = e.session_id;
        return;
      case 'assistant': {
        // A subagent's responses are not this turn's answer.
        if (e.parent_tool_use_id) return;
        const uses = e.message.content.filter((b) => b.type === 'tool_use');
        for (const b of uses) {
          const id = b.id ?? b.name ?? String(this.order.length);
          if (!this.calls.has(id)) this.order.push(id);
          this.calls.set(id, { name: b.name ?? 'tool', args: b.input ?? {}, output: null, status: null });
        }
        const text = e.message.content.filter((b) => b.type === 'text' && typeof b.text === 'string').map((b) => b.text as string).join('');
        // Text of a response that went on with tools is not the answer.
        this.text = uses.length ? '' : text;
        return;
      }
      case 'user': {
        if (e.parent_tool_use_id || typeof e.message.content === 'string') return;
        for (const b of e.message.content) {
          const call = b.type === 'tool_result' && b.tool_use_id ? this.calls.get(b.tool_use_id) : undefined;
          if (!call) continue;
          call.output = blockText(b.content) ?? null;
          call.status = b.is_error ? 'error' : 'completed';
        }
        return;
      }
      case 'result':
        if (e.session_id) this.sessionId ??= e.session_id;
        this.ended = e.is_error ? 'failed' : 'completed';
        if (e.is_error) this.error = e.error?.message ?? e.result ?? 'Qwen Code ended the turn with an error';
        else this.resultText = e.result ?? null;
        return;
      default:
        return;
    }
  }

  get answer(): string | null {
    const text = this.resultText ?? this.text;
    return text.trim() === '' ? null : text;
  }

  get tools(): ToolActivity[] {
    return this.order.map((id) => {
      const c = this.calls.get(id) as { name: string; args: unknown; output: string | null; status: string | null };
      return toolFromCall(c, c.output, c.status);
    });
  }
}

export interface HeadlessRun {
  argv: string[];
  env: Record<string, string>;
  /** The session file of the id once the run is over (null when there is none). */
  transcript(sessionId: string): Promise<string | null>;
}

export async function runHeadlessTurn(req: StructuredRunRequest, sessionId: string, run: HeadlessRun): Promise<StructuredTurnResult> {
  const reader = new QwenStreamReader();
  const report = req.onProgress;
  const res = await runJsonlProcess({
    argv: run.argv,
    env: run.env,
    cwd: req.config.cwd,
    // One stream-json user line: the text reaches the model byte for byte (`--input-format text`
    // appends "\n\n" to a piped prompt, measured on 0.24.4).
    stdin: `${JSON.stringify({ type: 'user', message: { role: 'user', content: req.message } })}\n`,
    timeoutMs: req.timeoutMs,
    ...(req.signal ? { signal: req.signal } : {}),
    ...(req.onSpawned ? { onSpawned: req.onSpawned } : {}),
    onEvent(value) {
      reader.feed(value);
      report?.({ observation: reader.sessionId ? { phase: 'running', turnKey: null } : { phase: 'waiting' }, tools: reader.tools, partialAnswer: reader.answer ?? '' });
    },
    // After its `result` Qwen still runs its memory extraction before it exits: the turn is over.
    isEnded: () => reader.ended !== null,
  }).catch(cliMissingIfUnstarted(run.argv[0] as string));
  if (res.timedOut) throw new CalError('timeout', `qwen gave no end of turn within ${Math.round(req.timeoutMs / 1000)}s`);
  reader.unknownEvents += res.otherLines;
  const why = reader.error ?? (lastStderrLine(res.stderr) || `exit status ${res.exitCode}`);
  if (!reader.sessionId) {
    if (req.mode === 'resume' && /No saved session found/i.test(res.stderr)) {
      throw new CalError('resume_unavailable', `qwen refused to resume session ${sessionId}: ${why}`);
    }
    if (res.signal) throw new CalError('lost', `qwen was ended by ${res.signal} before it started the session`);
    throw new CalError('turn_failed', `qwen failed before it started the session (exit ${res.exitCode}): ${why}`);
  }
  const base = { sessionId: reader.sessionId, tools: reader.tools, transcriptPath: await run.transcript(reader.sessionId), cliRunning: res.running };
  if (res.signal === 'SIGINT' || (req.signal?.aborted && reader.ended !== 'completed')) {
    return { ...base, status: 'interrupted', answer: reader.answer, error: 'cancelled by the caller' };
  }
  if (reader.ended === 'completed') return { ...base, status: 'completed', answer: reader.answer, error: null };
  if (reader.ended === 'failed' || (res.exitCode ?? 0) !== 0 || res.signal) return { ...base, status: 'failed', answer: null, error: why };
  throw new CalError('internal', `qwen ended (exit ${res.exitCode}) without a result event in its stream-json output (${reader.unknownEvents} unrecognised events): the event format may have changed`);
}
