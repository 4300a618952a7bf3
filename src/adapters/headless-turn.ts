import { CalError } from '../errors.js';
import type { ToolActivity } from '../handles/tool-activity.js';
import type { StructuredRunRequest, StructuredTurnResult } from './types.js';
import { cliMissingIfUnstarted, runJsonlProcess, type JsonlProcessResult } from './structured-process.js';

/**
 * One turn of a CLI's headless JSON mode, one process per turn (Gemini CLI `-o stream-json`,
 * Qwen Code `--output-format stream-json`, a fork of it): the CLI's stream, read one event at a
 * time, gives the session id, the tools, the answer and the end; the exit status only decides
 * what the stream did not. Each adapter supplies its stream's reader and what it passes the CLI.
 */

/** Follows one CLI's stream of JSON events (one parsed stdout line at a time). */
export interface HeadlessStreamReader {
  /** One parsed stdout line; `undefined` for a line that was not JSON. */
  feed(value: unknown): void;
  readonly sessionId: string | null;
  /** The stream's own end of the turn (its `result` event), null before it. */
  readonly ended: 'completed' | 'failed' | null;
  /** The CLI's words for a failed turn. */
  readonly error: string | null;
  readonly answer: string | null;
  readonly tools: ToolActivity[];
  unknownEvents: number;
}

export interface HeadlessTurnSpec {
  /** The CLI as the errors name it: `gemini -p`, `qwen`. */
  cli: string;
  argv: string[];
  env: Record<string, string>;
  /** What the process gets on stdin (it is closed after). */
  stdin: string;
  reader: HeadlessStreamReader;
  /** The session file of the id once the run is over (null when there is none). */
  transcript(sessionId: string): Promise<string | null>;
  /** Whether a run that started no session was the CLI refusing to resume the id. */
  refusedResume(run: JsonlProcessResult): boolean;
  /** The CLI's own last words on stderr ('' when there are none worth quoting). */
  lastWords(stderr: string): string;
  /**
   * Whether a stream that says completed also needs the CLI to have exited 0 (or still be
   * running). Gemini CLI exits non-zero for a turn it failed after its `result`; Qwen Code exits
   * 0 for every turn, and after its `result` still runs its memory extraction.
   */
  completedNeedsCleanExit: boolean;
}

/** What an adapter's launch of one turn gives the runner: the command, its environment, and where its session file is. */
export type HeadlessLaunch = Pick<HeadlessTurnSpec, 'argv' | 'env' | 'transcript'>;

export async function runHeadlessTurn(req: StructuredRunRequest, sessionId: string, spec: HeadlessTurnSpec): Promise<StructuredTurnResult> {
  const { reader } = spec;
  const report = req.onProgress;
  // The turn ends on the stream's `result`: the next turn waits for the process to exit.
  const res = await runJsonlProcess({
    argv: spec.argv,
    env: spec.env,
    cwd: req.config.cwd,
    stdin: spec.stdin,
    timeoutMs: req.timeoutMs,
    // A cancel interrupts the CLI as Ctrl-C in its terminal would.
    ...(req.signal ? { signal: req.signal } : {}),
    ...(req.onSpawned ? { onSpawned: req.onSpawned } : {}),
    onEvent(value) {
      reader.feed(value);
      report?.({ observation: reader.sessionId ? { phase: 'running', turnKey: null } : { phase: 'waiting' }, tools: reader.tools, partialAnswer: reader.answer ?? '' });
    },
    isEnded: () => reader.ended !== null,
  }).catch(cliMissingIfUnstarted(spec.argv[0] as string));
  if (res.timedOut) throw new CalError('timeout', `${spec.cli} gave no end of turn within ${Math.round(req.timeoutMs / 1000)}s`);
  reader.unknownEvents += res.otherLines;
  const why = reader.error ?? (spec.lastWords(res.stderr) || `exit status ${res.exitCode}`);
  if (!reader.sessionId) {
    if (req.mode === 'resume' && spec.refusedResume(res)) throw new CalError('resume_unavailable', `${spec.cli} refused to resume session ${sessionId}: ${why}`);
    if (res.signal) throw new CalError('lost', `${spec.cli} was ended by ${res.signal} before it started the session`);
    throw new CalError('turn_failed', `${spec.cli} failed before it started the session (exit ${res.exitCode}): ${why}`);
  }
  const base = { sessionId: reader.sessionId, tools: reader.tools, transcriptPath: await spec.transcript(reader.sessionId), cliRunning: res.running };
  if (res.signal === 'SIGINT' || (req.signal?.aborted && reader.ended !== 'completed')) {
    return { ...base, status: 'interrupted', answer: reader.answer, error: 'cancelled by the caller' };
  }
  const cleanExit = res.running || res.exitCode === 0;
  if (reader.ended === 'completed' && (cleanExit || !spec.completedNeedsCleanExit)) return { ...base, status: 'completed', answer: reader.answer, error: null };
  if (reader.ended === 'failed' || (res.exitCode ?? 0) !== 0 || res.signal) return { ...base, status: 'failed', answer: null, error: why };
  throw new CalError(
    'internal',
    `${spec.cli} ended (exit ${res.exitCode}) without a result event in its stream-json output (${reader.unknownEvents} unrecognised events): the event format may have changed`,
  );
}
