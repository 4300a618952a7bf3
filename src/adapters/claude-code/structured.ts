import { existsSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from '../../util/random.js';
import { z } from '../../util/zod.js';
import { CalError } from '../../errors.js';
import type { ToolActivity } from '../../handles/tool-activity.js';
import { lastStderrLine, startJsonlProcess, type HeldJsonlProcess, type JsonlLaunch } from '../structured-process.js';
import { startHeldTurn } from '../held-turn.js';
import type { LaunchRequest, StructuredRunRequest, StructuredTransport, StructuredTurnResult, TurnProgress } from '../types.js';
import { launchEnv, sessionFlags, transcriptCandidates } from './launch.js';
import { classifyRecord, INTERRUPT_PREFIX, TextBlock, toolFromUse, ToolResultBlock, ToolUseBlock, resultText, userText } from './records.js';
import { ALL_TEXT, type MessageGuard } from '../message-guard.js';

/**
 * Structured transport (research: adapters-gemini-cursor-agy-claude-structured.md §F, measured on
 * 2.1.328): one `claude -p --output-format stream-json --verbose --include-partial-messages` process per turn, with
 * `--session-id <id>` (the id the handle chose up front) for the first turn and `--resume <id>`
 * after. The message goes on stdin as one stream-json user line (`--input-format stream-json`,
 * its text kept byte for byte), never in argv: no size limit, and an input that is empty or cut
 * short (a cal that died before or while writing it) is no message at all, where `--input-format
 * text` would send what it got, or take an empty stdin as "resume the deferred tool" (2.1.328).
 * Measured on 2.0.12, 2.1.29, 2.1.328 and 2.1.332: the same events and answer as text input; an
 * empty stdin ends the process with status 0 and no turn.
 *
 * The turn ends only with the `result` event. Success is `is_error: false` with
 * `terminal_reason` `completed` (or none, as for a local command); `subtype` is never read: an
 * API error keeps `subtype: "success"` with `is_error: true`, `terminal_reason: "api_error"`.
 * An unknown resume id is a `result` with `errors: ["No conversation found with session ID: …"]`.
 */
/**
 * claude -p announces each retry of a failed model request on stdout (2.1.328's SDK schema:
 * `system/api_retry` with attempt, max_retries, retry_delay_ms, error_status); without it a
 * persistent HTTP 500 is minutes of silence.
 */
const ApiRetryEvent = z
  .object({ type: z.literal('system'), subtype: z.literal('api_retry'), attempt: z.number().int(), max_retries: z.number().int().optional(), retry_delay_ms: z.number().optional(), error_status: z.number().int().nullable().optional() })
  .passthrough();

const InitEvent = z.object({ type: z.literal('system'), subtype: z.literal('init'), session_id: z.string() }).passthrough();
const ResultEvent = z
  .object({
    type: z.literal('result'),
    is_error: z.boolean(),
    session_id: z.string().optional(),
    result: z.string().optional(),
    terminal_reason: z.string().nullable().optional(),
    api_error_status: z.number().nullable().optional(),
    errors: z.array(z.string()).optional(),
  })
  .passthrough();

type Result = z.infer<typeof ResultEvent>;

/**
 * `--include-partial-messages` (present since 1.0.86, below the 2.0.12 floor; measured on
 * 2.1.328): the API's own stream events, wrapped as `stream_event`. A `message_start` opens a new
 * model message; each `text_delta` adds to its text. A subagent's (parent_tool_use_id set) are not
 * this turn's answer.
 */
const StreamEvent = z
  .object({
    type: z.literal('stream_event'),
    parent_tool_use_id: z.string().nullable().optional(),
    event: z.object({ type: z.string(), delta: z.object({ type: z.string(), text: z.string().optional() }).passthrough().optional() }).passthrough(),
  })
  .passthrough();

/** Follows one `-p` event stream: the session id, the text and tool calls so far, the result. */
export class ClaudeStream implements TurnProgress {
  sessionId: string | null = null;
  result: Result | null = null;
  tools: ToolActivity[] = [];
  partialAnswer = '';
  unknownEvents = 0;
  /** Claude's own "[Request interrupted by user]" record: a SIGINT ended the turn (no result follows). */
  interrupted = false;
  private readonly toolIndex = new Map<string, ToolActivity>();
  /** The text of the model message being streamed (stream_event deltas), for --stream. */
  private streamed = '';

  get observation(): TurnProgress['observation'] {
    return this.sessionId ? { phase: 'running', turnKey: null } : { phase: 'waiting' };
  }

  feed(value: unknown): void {
    const partial = StreamEvent.safeParse(value);
    if (partial.success) {
      this.onStreamEvent(partial.data);
      return;
    }
    const init = InitEvent.safeParse(value);
    if (init.success) {
      this.sessionId = init.data.session_id;
      return;
    }
    const result = ResultEvent.safeParse(value);
    if (result.success) {
      this.result = result.data;
      if (result.data.session_id) this.sessionId ??= result.data.session_id;
      return;
    }
    const rec = classifyRecord(value);
    if (rec.kind === 'assistant') {
      const text = rec.record.message.content
        .map((b) => TextBlock.safeParse(b))
        .flatMap((b) => (b.success ? [b.data.text] : []))
        .join('');
      if (text) this.partialAnswer = text;
      for (const block of rec.record.message.content) {
        const use = ToolUseBlock.safeParse(block);
        if (!use.success) continue;
        // No status until its result arrives: --stream prints the result line once it has one.
        const tool = toolFromUse(use.data);
        this.tools.push(tool);
        this.toolIndex.set(use.data.id, tool);
      }
    } else if (rec.kind === 'user') {
      // No --replay-user-messages: a user record on stdout is Claude's, never the message sent.
      if (userText(rec.record)?.startsWith(INTERRUPT_PREFIX)) this.interrupted = true;
      if (!Array.isArray(rec.record.message.content)) return;
      for (const block of rec.record.message.content) {
        const done = ToolResultBlock.safeParse(block);
        const tool = done.success ? this.toolIndex.get(done.data.tool_use_id) : undefined;
        if (!done.success || !tool) continue;
        tool.output = resultText(done.data);
        tool.status = done.data.is_error ? 'error' : 'completed';
      }
    } else if (rec.kind === 'unknown') {
      // rate_limit_event, hook events and whatever a newer version adds.
      this.unknownEvents++;
    }
  }

  private onStreamEvent({ parent_tool_use_id, event }: z.infer<typeof StreamEvent>): void {
    if (parent_tool_use_id) return;
    if (event.type === 'message_start') this.streamed = '';
    else if (event.type === 'content_block_delta' && event.delta?.type === 'text_delta' && event.delta.text) {
      this.streamed += event.delta.text;
      this.partialAnswer = this.streamed;
    }
  }
}

/** The message as the one user line of a stream-json stdin (research §F, "Long-lived process"). */
export function userLine(message: string): string {
  return `${JSON.stringify({ type: 'user', message: { role: 'user', content: [{ type: 'text', text: message }] } })}\n`;
}

export function printArgv(req: Omit<LaunchRequest, 'message'>, mode: 'fresh' | 'resume', sessionId: string): string[] {
  const argv = [req.cli.realPath, '-p', '--input-format', 'stream-json', '--output-format', 'stream-json', '--verbose', '--include-partial-messages'];
  argv.push(mode === 'fresh' ? '--session-id' : '--resume', sessionId);
  argv.push(...sessionFlags(req.config));
  // Only the handle's MCP servers, as the session was configured (this also ends --mcp-config).
  if (req.config.mcpConfigPath) argv.push('--strict-mcp-config');
  return argv;
}

async function transcriptOf(req: Omit<StructuredRunRequest, 'timeoutMs'>, id: string): Promise<string | null> {
  // The file an earlier turn found is still this session's while it is there under the id's name.
  if (req.knownTranscript && path.basename(req.knownTranscript) === `${id}.jsonl` && existsSync(req.knownTranscript)) return req.knownTranscript;
  for (const file of await transcriptCandidates(req.env, req.config.cwd, id)) if (existsSync(file)) return file;
  return null;
}

function printLaunch(req: Omit<LaunchRequest, 'message'>, mode: 'fresh' | 'resume', sessionId: string): JsonlLaunch {
  return { argv: printArgv(req, mode, sessionId), env: launchEnv(req.env, req.config), cwd: req.config.cwd };
}

async function runPrintTurn(req: StructuredRunRequest, started?: HeldJsonlProcess): Promise<StructuredTurnResult> {
  let mode = req.mode;
  let id = req.sessionId;
  if (mode === 'resume' && !id) throw new CalError('internal', 'claude --resume without a session id');
  if (mode === 'fresh') {
    id ??= randomUUID();
    // A first turn that already reached the CLI (cal lost it after the send) is resumed: the id
    // is taken, and starting it again would fail ("already in use") or fork the history.
    if (await transcriptOf(req, id)) mode = 'resume';
  }
  const sessionId = id as string;
  const stream = new ClaudeStream();
  const report = req.onProgress;
  // A cancel that came before the send sends nothing (a Ctrl-C may also have ended a started CLI).
  if (req.signal?.aborted) {
    started?.discard();
    throw new CalError('interrupted', 'cancelled by the caller before the message was sent');
  }
  const held = started ?? startJsonlProcess(printLaunch(req, mode, sessionId));
  if (held.pid !== undefined) req.onSpawned?.(held.pid);
  const run = await held.send(userLine(req.message), {
    timeoutMs: req.timeoutMs,
    ...(req.signal ? { signal: req.signal } : {}),
    onEvent(value) {
      const retry = ApiRetryEvent.safeParse(value);
      if (retry.success) {
        const r = retry.data;
        req.onRetry?.({ attempt: r.attempt, maxRetries: r.max_retries ?? null, delayMs: r.retry_delay_ms ?? null, errorStatus: r.error_status ?? null });
      }
      stream.feed(value);
      report?.(stream);
    },
    // The result event ends the turn (design §4.6): claude -p then writes its last transcript
    // records and exits by itself, 20-50 ms later (2.1.328), which this turn does not wait for.
    isEnded: () => stream.result !== null,
  });
  if (run.timedOut) throw new CalError('timeout', `claude -p gave no result within ${Math.round(req.timeoutMs / 1000)}s`);
  const result = stream.result;
  if (!result && (stream.interrupted || req.signal?.aborted)) {
    // A SIGINT (Ctrl-C, or cal's cancel) mid-turn: claude -p ends with status 0 and no result
    // event, most often after recording the interruption on stdout, but not always (2.1.328: a
    // Ctrl-C to cal's whole group once ended it with neither), so the caller's cancel counts too.
    const id = stream.sessionId ?? sessionId;
    return { sessionId: id, tools: stream.tools, transcriptPath: await transcriptOf(req, id), status: 'interrupted', answer: null, error: 'claude -p was interrupted before its result' };
  }
  if (!result) {
    const why = lastStderrLine(run.stderr) || `exit status ${run.exitCode}`;
    if (run.signal) throw new CalError('lost', `claude -p was ended by ${run.signal} before its result: ${why}`);
    throw new CalError(
      'turn_failed',
      `claude -p ended (exit ${run.exitCode}) without a result event (${stream.unknownEvents + run.otherLines} unrecognised lines): ${why}`,
    );
  }
  const errors = result.errors?.filter(Boolean) ?? [];
  if (mode === 'resume' && errors.some((e) => /No conversation found/i.test(e))) {
    throw new CalError('resume_unavailable', `claude refused to resume session ${sessionId}: ${errors.join('; ')}`);
  }
  const base = {
    sessionId: result.session_id ?? stream.sessionId ?? sessionId,
    tools: stream.tools,
    transcriptPath: await transcriptOf(req, result.session_id ?? sessionId),
    cliRunning: run.running,
  };
  const reason = result.terminal_reason ?? null;
  if (!result.is_error && (reason === null || reason === 'completed')) {
    return { ...base, status: 'completed', answer: result.result ?? stream.partialAnswer, error: null };
  }
  const error = errors.join('; ') || result.result || `claude -p ended with terminal_reason ${reason ?? 'unknown'}`;
  // aborted_streaming, aborted_tools: the turn was stopped (a signal, an interrupt), not failed.
  if (reason?.startsWith('aborted')) return { ...base, status: 'interrupted', answer: null, error };
  return { ...base, status: 'failed', answer: null, error };
}

/**
 * `claude -p` runs a message whose very first character is '/' as a slash command (2.1.328:
 * "/compact" compacted); a space in front keeps it text, and so does a '/' behind blanks
 * (measured: " /help" reached the model).
 */
const printGuard: MessageGuard = {
  passesOver: 'blanks',
  leads: { ...ALL_TEXT, '/': { means: '`claude -p` runs a leading "/" as a slash command', readAt: 'start', action: 'space' } },
};

export const claudeStructured: StructuredTransport = {
  run: (req) => runPrintTurn(req),
  messageGuard: printGuard,
  // Claude reads its config, then stdin, then the session: started before cal's bookkeeping.
  start: (req) => startHeldTurn(req, (r, id) => printLaunch(r, 'resume', id), runPrintTurn),
  nextLaunch: (req) => (req.sessionId ? printLaunch(req, 'resume', req.sessionId) : null),
};
