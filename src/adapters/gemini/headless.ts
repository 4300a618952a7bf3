import { z } from '../../util/zod.js';
import { feedJsonLines } from '../../util/json-lines.js';
import type { ToolActivity } from '../../handles/tool-activity.js';
import type { LaunchRequest, StructuredRunRequest, StructuredTurnResult } from '../types.js';
import { toolFromCall } from './transcript.js';
import { runHeadlessTurn as runSharedTurn, type HeadlessLaunch } from '../headless-turn.js';

/**
 * Structured transport: one headless `gemini -p … -o stream-json` process per turn, with
 * `--session-id <uuid>` on the first turn (cal chooses the id) and `--resume <uuid>` after (never
 * `latest`), in the same working directory and managed home. Measured on 0.61.0 (research
 * adapters-gemini-cursor-agy-claude-structured.md §B, §C): the stream opens with `init`
 * (session_id), carries the assistant's text as `message` deltas and tools as
 * `tool_use`/`tool_result`, and ends with `result` (no session id; `status` success or error,
 * the CLI's error text in `error.message`). A failed request exits with the HTTP status mod 256
 * (500 → 244, 429 → 173) after `general.maxAttempts`, so a failing model is bounded by the
 * attempts cal caps in the managed settings: headless Gemini has no retry dialog.
 */
const StreamEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('init'), session_id: z.string() }).passthrough(),
  z.object({ type: z.literal('message'), role: z.string(), content: z.string() }).passthrough(),
  z.object({ type: z.literal('tool_use'), tool_name: z.string(), tool_id: z.string(), parameters: z.unknown().optional() }).passthrough(),
  z
    .object({
      type: z.literal('tool_result'),
      tool_id: z.string(),
      status: z.string(),
      output: z.string().optional(),
      error: z.object({ type: z.string().optional(), message: z.string() }).passthrough().optional(),
    })
    .passthrough(),
  z.object({ type: z.literal('error'), message: z.string() }).passthrough(),
  z.object({ type: z.literal('result'), status: z.string(), error: z.object({ message: z.string() }).passthrough().optional() }).passthrough(),
]);

export interface HeadlessStream {
  sessionId: string | null;
  ended: 'completed' | 'failed' | null;
  /** The text of the model's last response that called no tool (the text since the last tool call). */
  answer: string | null;
  error: string | null;
  /** Non-fatal `error` events (loop detected, …), last one last. */
  warnings: string[];
  tools: ToolActivity[];
  unknownEvents: number;
}

/** Follows `gemini -o stream-json` events one at a time, as each stdout line completes. */
export class HeadlessStreamReader {
  sessionId: string | null = null;
  ended: HeadlessStream['ended'] = null;
  error: string | null = null;
  readonly warnings: string[] = [];
  unknownEvents = 0;
  private readonly calls = new Map<string, { name: string; args: unknown; status?: string; output?: string }>();
  private readonly order: string[] = [];
  private text = '';
  /** A tool stopped the agent (error type `stop_execution`): the CLI asks the model nothing more. */
  private stopped: string | null = null;

  /** One parsed stdout line; `undefined` for a line that was not JSON. */
  feed(value: unknown): void {
    const parsed = value === undefined ? null : StreamEvent.safeParse(value);
    if (!parsed?.success) {
      this.unknownEvents++;
      return;
    }
    const e = parsed.data;
    switch (e.type) {
      case 'init':
        this.sessionId = e.session_id;
        break;
      case 'message':
        if (e.role === 'assistant') this.text += e.content;
        break;
      case 'tool_use':
        // Text before a tool call belongs to a response that went on with tools: not the answer.
        this.text = '';
        if (!this.calls.has(e.tool_id)) this.order.push(e.tool_id);
        this.calls.set(e.tool_id, { name: e.tool_name, args: e.parameters ?? {} });
        break;
      case 'tool_result': {
        const call = this.calls.get(e.tool_id);
        if (call) {
          call.status = e.status;
          const output = e.output ?? e.error?.message;
          if (output !== undefined) call.output = output;
        }
        if (e.error?.type === 'stop_execution') this.stopped = e.output ?? `Agent execution stopped: ${e.error.message}`;
        break;
      }
      case 'error':
        this.warnings.push(e.message);
        break;
      case 'result':
        // After a stop Gemini reports "success" with no reply (0.61.0): no answer is no success.
        if (e.status === 'success' && this.stopped !== null && this.answer === null) {
          this.ended = 'failed';
          this.error = this.stopped;
          break;
        }
        this.ended = e.status === 'success' ? 'completed' : 'failed';
        if (e.status !== 'success') this.error = e.error?.message ?? `Gemini CLI ended the turn with status ${e.status}`;
        break;
    }
  }

  get answer(): string | null {
    return this.text.trim() === '' ? null : this.text;
  }

  get tools(): ToolActivity[] {
    return this.order.map((id) => {
      const c = this.calls.get(id) as { name: string; args: unknown; status?: string; output?: string };
      return toolFromCall({ id, name: c.name, args: c.args, ...(c.status ? { status: c.status } : {}), ...(c.output !== undefined ? { resultDisplay: c.output } : {}) });
    });
  }

  get stream(): HeadlessStream {
    return { sessionId: this.sessionId, ended: this.ended, answer: this.answer, error: this.error, warnings: [...this.warnings], tools: this.tools, unknownEvents: this.unknownEvents };
  }
}

/** Parses `gemini -o stream-json` stdout (one JSON event per line). */
export function parseHeadlessStream(stdout: string): HeadlessStream {
  const reader = new HeadlessStreamReader();
  feedJsonLines(stdout, (value) => reader.feed(value));
  return reader.stream;
}

/** The headless argv for one turn (after the approval and model flags every launch gets). */
export function headlessArgv(req: LaunchRequest, sessionId: string, shared: string[]): string[] {
  const resume = req.mode === 'resume';
  // `--prompt=<text>` keeps a message that starts with '-' from being read as a flag.
  return [req.cli.realPath, ...shared, ...(resume ? ['--resume', sessionId] : ['--session-id', sessionId]), '--output-format', 'stream-json', `--prompt=${req.message}`];
}

/** The CLI's own last words on stderr: its last line that says something other than a banner. */
export function lastStderrLine(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !/^(Warning: |Ripgrep is not available|at |Loaded cached credentials)/.test(l));
  return lines.at(-1) ?? '';
}

/** One turn of headless Gemini: the shared runner with Gemini's stream, argv and refusals. */
export function runHeadlessTurn(req: StructuredRunRequest, sessionId: string, run: HeadlessLaunch): Promise<StructuredTurnResult> {
  // Gemini's stdout and stderr are files (structured-process.ts): a cal killed mid-turn leaves a
  // Gemini that can still write, and so finishes the turn in its session file for `cal recover`
  // (on a pipe nobody reads, a node CLI dies of EPIPE at its next write). The turn ends on its
  // `result`: Gemini exits 94-175 ms after it (0.61.0, measured in a long-lived program), its
  // session file already holding the answer; the next turn waits for that exit.
  return runSharedTurn(req, sessionId, {
    cli: 'gemini -p',
    ...run,
    // Empty: headless Gemini appends stdin to the prompt, and nothing is to be appended.
    stdin: '',
    reader: new HeadlessStreamReader(),
    // Exit 42: "Error resuming session" / "Invalid session identifier" (an id this home and folder do not hold).
    refusedResume: (res) => res.exitCode === 42 || /resuming session|Invalid session identifier|No previous sessions/i.test(res.stderr),
    lastWords: lastStderrLine,
    // A failed request exits with the HTTP status mod 256 even where a `result` came first.
    completedNeedsCleanExit: true,
  });
}
