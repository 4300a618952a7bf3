import { CalError } from '../../errors.js';
import type { StructuredRunRequest, StructuredTransport, StructuredTurnResult } from '../types.js';
import { stderrTail } from '../ndjson-process.js';
import { cliMissingIfUnstarted, runJsonlProcess } from '../structured-process.js';
import { mcpServerNames, sessionFlags } from './launch.js';
import { createSession, mirrorPath, sessionExists, sessionIdFor, storeEnv, syncMirror } from './store.js';

/**
 * One turn of OpenCode on the structured transport: `opencode run --format json [-s <id>] <msg>`
 * prints one JSON event a line (`step_start`, `text`, `tool_use`, `step_finish` with its `reason`,
 * `error`), each with the `sessionID`, and exits when the turn ends. cal uses it rather than
 * `opencode acp` because no ACP client is in this cal yet (docs/opencode.md).
 */
type Event = { type?: unknown; sessionID?: unknown; part?: { text?: unknown; reason?: unknown }; error?: { name?: unknown; data?: { message?: unknown } } };

class RunStream {
  sessionId: string | null = null;
  texts: string[] = [];
  lastFinish: string | null = null;
  error: { name: string; message: string } | null = null;
  feed(value: unknown): void {
    if (value === null || typeof value !== 'object') return;
    const e = value as Event;
    if (typeof e.sessionID === 'string' && !this.sessionId) this.sessionId = e.sessionID;
    if (e.type === 'step_start') this.texts = [];
    if (e.type === 'text' && typeof e.part?.text === 'string') this.texts.push(e.part.text);
    if (e.type === 'step_finish' && typeof e.part?.reason === 'string') this.lastFinish = e.part.reason;
    if (e.type === 'error') this.error = { name: String(e.error?.name ?? 'Error'), message: String(e.error?.data?.message ?? e.error?.name ?? 'OpenCode reported an error') };
  }
  get answer(): string | null {
    const text = this.texts.join('');
    return text === '' ? null : text;
  }
}

async function runOpencodeTurn(req: StructuredRunRequest): Promise<StructuredTurnResult> {
  const flags = sessionFlags(req);
  const resumeArgs: string[] = [];
  if (req.mode === 'resume') {
    if (!req.sessionId) throw new CalError('internal', 'opencode resume without a session id');
    // `-s` with an id the store lacks fails late and vaguely: check first.
    if (!(await sessionExists(req.cli.realPath, storeEnv(flags.env), req.sessionId))) {
      throw new CalError('resume_unavailable', `OpenCode's store has no session ${req.sessionId} any more (deleted, or XDG_DATA_HOME changed)`);
    }
    resumeArgs.push('--session', req.sessionId);
  } else if (req.sessionId) {
    // The first turn runs in a session of an id derived from the handle's own (made empty just
    // before, store.ts), so a cal that dies mid-turn leaves a session recover finds by the handle.
    const sessionId = sessionIdFor(req.sessionId);
    await createSession(req.cli, storeEnv(flags.env), req.config.cwd, sessionId);
    resumeArgs.push('--session', sessionId);
  }
  const stream = new RunStream();
  const argv = [req.cli.realPath, 'run', '--format', 'json', ...resumeArgs, ...flags.argv];
  const report = req.onProgress;
  // The message goes on stdin, byte for byte: `opencode run` wraps each argv word holding a space
  // in quotes before it sends the words (measured on 1.18.33), and reads a piped stdin as the message.
  const run = await runJsonlProcess({
    argv,
    env: flags.env,
    cwd: req.config.cwd,
    stdin: req.message,
    timeoutMs: req.timeoutMs,
    ...(req.signal ? { signal: req.signal } : {}),
    ...(req.onSpawned ? { onSpawned: req.onSpawned } : {}),
    onEvent: (value) => {
      stream.feed(value);
      report?.({ observation: stream.sessionId ? { phase: 'running', turnKey: null } : { phase: 'waiting' }, tools: [], partialAnswer: stream.answer ?? '' });
    },
  }).catch(cliMissingIfUnstarted(argv[0] as string));
  if (run.timedOut) throw new CalError('timeout', `opencode run gave no end within ${Math.round(req.timeoutMs / 1000)}s`);
  const said = stderrTail(run.stderr, flags.env);
  const sessionId = stream.sessionId;
  if (!sessionId) throw new CalError('turn_failed', `opencode run ended (exit ${run.exitCode ?? run.signal}) before it named a session${said ? `: ${said}` : ''}`);
  const expected = req.mode === 'resume' ? req.sessionId : req.sessionId ? sessionIdFor(req.sessionId) : null;
  if (expected && sessionId !== expected) {
    throw new CalError('resume_unavailable', `opencode run answered in session ${sessionId}, not in ${expected} it was told to use`);
  }
  const transcriptPath = mirrorPath(flags.env, sessionId);
  await syncMirror(transcriptPath, { kind: 'opencode-mirror', sessionId, executable: req.cli.realPath, env: storeEnv(flags.env), mcpServers: mcpServerNames(req.config) });
  const base = { sessionId, tools: [], transcriptPath };
  if (req.signal?.aborted || run.signal === 'SIGINT' || stream.error?.name === 'MessageAbortedError') {
    return { ...base, status: 'interrupted', answer: null, error: stream.error?.message ?? 'interrupted' };
  }
  if (stream.error) return { ...base, status: 'failed', answer: null, error: stream.error.message };
  if (run.exitCode !== 0 || stream.lastFinish === null || stream.lastFinish === 'tool-calls') {
    return { ...base, status: 'failed', answer: null, error: `opencode run ended with exit status ${run.exitCode ?? run.signal} without finishing its turn${said ? `: ${said}` : ''}` };
  }
  return { ...base, status: 'completed', answer: stream.answer, error: null };
}

export const opencodeStructured: StructuredTransport = { run: runOpencodeTurn };
