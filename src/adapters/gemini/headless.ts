import { z } from '../../util/zod.js';
import { CalError } from '../../errors.js';
import type { ToolActivity } from '../../handles/tool-activity.js';
import type { LaunchRequest, StructuredRunRequest, StructuredTurnResult } from '../types.js';
import { toolFromCall } from './transcript.js';
import { parseJsonLines } from '../json-lines.js';
import { runProcess } from '../run-process.js';

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
      error: z.object({ message: z.string() }).passthrough().optional(),
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

/** Parses `gemini -o stream-json` stdout (one JSON event per line). */
export function parseHeadlessStream(stdout: string): HeadlessStream {
  const out: HeadlessStream = { sessionId: null, ended: null, answer: null, error: null, warnings: [], tools: [], unknownEvents: 0 };
  const calls = new Map<string, { name: string; args: unknown; status?: string; output?: string }>();
  const order: string[] = [];
  let text = '';
  const { events, unknown } = parseJsonLines(stdout, StreamEvent);
  out.unknownEvents = unknown;
  for (const e of events) {
    switch (e.type) {
      case 'init':
        out.sessionId = e.session_id;
        break;
      case 'message':
        if (e.role === 'assistant') text += e.content;
        break;
      case 'tool_use':
        // Text before a tool call belongs to a response that went on with tools: not the answer.
        text = '';
        if (!calls.has(e.tool_id)) order.push(e.tool_id);
        calls.set(e.tool_id, { name: e.tool_name, args: e.parameters ?? {} });
        break;
      case 'tool_result': {
        const call = calls.get(e.tool_id);
        if (call) {
          call.status = e.status;
          const output = e.output ?? e.error?.message;
          if (output !== undefined) call.output = output;
        }
        break;
      }
      case 'error':
        out.warnings.push(e.message);
        break;
      case 'result':
        out.ended = e.status === 'success' ? 'completed' : 'failed';
        if (e.status !== 'success') out.error = e.error?.message ?? `Gemini CLI ended the turn with status ${e.status}`;
        break;
    }
  }
  out.answer = text.trim() === '' ? null : text;
  out.tools = order.map((id) => {
    const c = calls.get(id) as { name: string; args: unknown; status?: string; output?: string };
    return toolFromCall({ id, name: c.name, args: c.args, ...(c.status ? { status: c.status } : {}), ...(c.output !== undefined ? { resultDisplay: c.output } : {}) });
  });
  return out;
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

export interface HeadlessRun {
  argv: string[];
  env: Record<string, string>;
  /** Finds the session file of the id once the run is over (null when there is none). */
  transcript(sessionId: string): Promise<string | null>;
}

export async function runHeadlessTurn(req: StructuredRunRequest, sessionId: string, run: HeadlessRun): Promise<StructuredTurnResult> {
  // Items as Gemini reports them, before the turn ends (--stream): the complete lines so far.
  const report = req.onProgress;
  let seen = '';
  const res = await runProcess(run.argv[0] as string, run.argv.slice(1), {
    cwd: req.config.cwd,
    env: run.env,
    // stdin closed: headless Gemini appends stdin to the prompt, and nothing is to be appended.
    timeoutMs: req.timeoutMs,
    maxBuffer: 256 << 20,
    // A cancel interrupts Gemini as Ctrl-C in its terminal would.
    ...(req.signal ? { interrupt: req.signal } : {}),
    ...(req.onSpawned ? { onSpawned: req.onSpawned } : {}),
    onStdout: report
      ? (chunk) => {
          seen += chunk.toString('utf8');
          const so = parseHeadlessStream(seen.slice(0, seen.lastIndexOf('\n') + 1));
          report({ observation: so.sessionId ? { phase: 'running', turnKey: null } : { phase: 'waiting' }, tools: so.tools, partialAnswer: so.answer ?? '' });
        }
      : undefined,
  });
  if (res.spawnError) {
    throw new CalError('cli_missing', `could not run ${run.argv[0]} (${res.spawnError.code ?? res.spawnError.message}): reinstall it or start a new session`);
  }
  if (res.timedOut) throw new CalError('timeout', `gemini -p gave no end of turn within ${Math.round(req.timeoutMs / 1000)}s`);
  const stream = parseHeadlessStream(res.stdout);
  const why = stream.error ?? (lastStderrLine(res.stderr) || `exit status ${res.exitCode}`);
  if (!stream.sessionId) {
    // Exit 42: "Error resuming session" / "Invalid session identifier" (an id this home and folder do not hold).
    if (req.mode === 'resume' && (res.exitCode === 42 || /resuming session|Invalid session identifier|No previous sessions/i.test(res.stderr))) {
      throw new CalError('resume_unavailable', `gemini refused to resume session ${sessionId}: ${why}`);
    }
    if (res.signal) throw new CalError('lost', `gemini -p was ended by ${res.signal} before it started the session`);
    throw new CalError('turn_failed', `gemini -p failed before it started the session (exit ${res.exitCode}): ${why}`);
  }
  const base = { sessionId: stream.sessionId, tools: stream.tools, transcriptPath: await run.transcript(stream.sessionId) };
  if (res.signal === 'SIGINT' || (req.signal?.aborted && stream.ended !== 'completed')) {
    return { ...base, status: 'interrupted', answer: stream.answer, error: 'cancelled by the caller' };
  }
  if (stream.ended === 'completed' && res.exitCode === 0) return { ...base, status: 'completed', answer: stream.answer, error: null };
  if (stream.ended === 'failed' || (res.exitCode ?? 0) !== 0) return { ...base, status: 'failed', answer: null, error: why };
  throw new CalError(
    'internal',
    `gemini -p ended (exit ${res.exitCode}) without a result event in its stream-json output (${stream.unknownEvents} unrecognised events): the event format may have changed`,
  );
}
