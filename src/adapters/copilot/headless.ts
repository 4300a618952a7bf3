import { z } from '../../util/zod.js';
import { CalError } from '../../errors.js';
import type { StructuredRunRequest, StructuredTurnResult, TurnObservation } from '../types.js';
import { cliMissingIfUnstarted, lastStderrLine, runJsonlProcess } from '../structured-process.js';
import { CopilotTurnObserver } from './events.js';

/**
 * Structured transport: Copilot's own JSON mode, one headless process per turn
 * (`copilot --output-format=json`, the message on stdin, `--session-id=<uuid>` on the first turn
 * and `--resume=<uuid>` after; docs/copilot.md). Measured on 1.0.102: stdout is one session event
 * a line, the very events of `events.jsonl` (the same schema, so the same CopilotTurnObserver reads
 * them) plus the ephemeral ones (`assistant.message_delta`, `assistant.idle`), and the stream
 * closes with `{"type":"result","sessionId","exitCode"}` as the process exits. The turn ends as in
 * the store: the end of a model call that asked for no tool (completed), `session.error` (failed,
 * exit 1), `abort` after SIGINT (interrupted, exit 0). An id Copilot does not hold exits 1 before
 * any event ("No session, task, or name matched").
 */
const ResultEvent = z.object({ type: z.literal('result'), sessionId: z.string().optional(), exitCode: z.number().optional() }).passthrough();
const Delta = z.object({ type: z.literal('assistant.message_delta'), data: z.object({ messageId: z.string().optional(), deltaContent: z.string() }).passthrough() }).passthrough();

/** Follows the JSON stream of one headless turn. */
export class CopilotStreamReader {
  readonly observer: CopilotTurnObserver;
  sessionId: string | null = null;
  /** The stream's closing `result` (the process exits right after it). */
  closed = false;
  exitCode: number | null = null;
  private deltas = '';
  private deltaMessage: string | undefined;

  constructor(message: string) {
    this.observer = new CopilotTurnObserver(message);
  }

  feed(value: unknown): void {
    const result = ResultEvent.safeParse(value);
    if (result.success) {
      this.closed = true;
      this.sessionId = result.data.sessionId ?? this.sessionId;
      this.exitCode = result.data.exitCode ?? null;
      return;
    }
    const delta = Delta.safeParse(value);
    if (delta.success) {
      // Streamed text of the message being written, for --stream; the stored message replaces it.
      if (delta.data.data.messageId !== this.deltaMessage) [this.deltas, this.deltaMessage] = ['', delta.data.data.messageId];
      this.deltas += delta.data.data.deltaContent;
      return;
    }
    if ((value as { type?: unknown } | null)?.type === 'assistant.message') this.deltas = '';
    this.observer.feed(value);
  }

  get observation(): TurnObservation {
    return this.observer.observation;
  }

  get partialAnswer(): string {
    return this.observer.partialAnswer + this.deltas;
  }
}

export interface HeadlessRun {
  argv: string[];
  env: Record<string, string>;
  /** The session's event log once the run is over (null when there is none). */
  transcript(sessionId: string): string | null;
}

export async function runHeadlessTurn(req: StructuredRunRequest, sessionId: string, run: HeadlessRun): Promise<StructuredTurnResult> {
  const reader = new CopilotStreamReader(req.message);
  const report = req.onProgress;
  const res = await runJsonlProcess({
    argv: run.argv,
    env: run.env,
    cwd: req.config.cwd,
    // Piped, the message is taken byte for byte (no argv limit, no flag parsing of a leading '-').
    stdin: req.message,
    timeoutMs: req.timeoutMs,
    ...(req.signal ? { signal: req.signal } : {}),
    ...(req.onSpawned ? { onSpawned: req.onSpawned } : {}),
    onEvent(value) {
      reader.feed(value);
      report?.({ observation: reader.observation, tools: reader.observer.tools, partialAnswer: reader.partialAnswer });
    },
    isEnded: () => reader.closed,
  }).catch(cliMissingIfUnstarted(run.argv[0] as string));
  if (res.timedOut) throw new CalError('timeout', `copilot gave no end of turn within ${Math.round(req.timeoutMs / 1000)}s`);
  const obs = reader.observation;
  const why = (obs.phase === 'ended' ? obs.error : null) ?? (lastStderrLine(res.stderr) || `exit status ${reader.exitCode ?? res.exitCode}`);
  if (obs.phase === 'waiting') {
    if (req.mode === 'resume' && /No session, task, or name matched/i.test(res.stderr)) {
      throw new CalError('resume_unavailable', `copilot refused to resume session ${sessionId}: ${why}`);
    }
    if (res.signal) throw new CalError('lost', `copilot was ended by ${res.signal} before it took the message`);
    throw new CalError('turn_failed', `copilot failed before it took the message (exit ${reader.exitCode ?? res.exitCode}): ${why}`);
  }
  const id = reader.sessionId ?? sessionId;
  const base = { sessionId: id, tools: reader.observer.tools, transcriptPath: run.transcript(id), cliRunning: res.running };
  if (obs.phase === 'ended' && obs.status === 'completed') return { ...base, status: 'completed', answer: obs.answer, error: null };
  if ((obs.phase === 'ended' && obs.status === 'interrupted') || res.signal === 'SIGINT' || req.signal?.aborted) {
    return { ...base, status: 'interrupted', answer: obs.phase === 'ended' ? obs.answer : null, error: 'cancelled by the caller' };
  }
  if (obs.phase === 'ended' && obs.status === 'failed') return { ...base, status: 'failed', answer: null, error: why };
  if (reader.closed || res.signal || (res.exitCode ?? 0) !== 0) {
    return { ...base, status: 'failed', answer: null, error: obs.phase === 'ended' ? why : `copilot ended the turn with no reply and no error (${why})` };
  }
  throw new CalError('internal', `copilot exited (${res.exitCode}) without a result event in its JSON output: the event format may have changed`);
}
