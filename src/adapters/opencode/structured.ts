import { CalError } from '../../errors.js';
import type { AcpLaunch, StructuredRunRequest, StructuredTransport, StructuredTurnResult } from '../types.js';
import { stderrTail } from '../ndjson-process.js';
import { cliMissingIfUnstarted, runJsonlProcess } from '../structured-process.js';
import { mcpServerNames, sessionFlags } from './launch.js';
import { createSession, mirrorPath, sessionExists, sessionIdFor, storeEnv, syncMirror } from './store.js';
import { acpMessageGuard } from '../acp-transport.js';
import { TEXT_ONLY_GUARD } from '../message-guard.js';
import { envName, mirrorKind, type OpencodeFlavour } from './flavour.js';

/**
 * One turn of OpenCode on the structured transport: `opencode run --format json [-s <id>] <msg>`
 * prints one JSON event a line (`step_start`, `text`, `tool_use`, `step_finish` with its `reason`,
 * `error`), each with the `sessionID`, and exits when the turn ends. `opencode acp` is the other
 * structured transport (`--transport acp`, opencodeAcp below; docs/acp.md). Kilo Code CLI's
 * `kilo run --format json` prints the same events (7.7.7, measured): both run through here.
 */
type Event = { type?: unknown; sessionID?: unknown; part?: { text?: unknown; reason?: unknown; synthetic?: unknown }; error?: { name?: unknown; data?: { message?: unknown } } };

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
    // A synthetic text part is not the model's (Kilo's transient snapshot progress, turn.ts).
    if (e.type === 'text' && typeof e.part?.text === 'string' && e.part.synthetic !== true) this.texts.push(e.part.text);
    if (e.type === 'step_finish' && typeof e.part?.reason === 'string') this.lastFinish = e.part.reason;
    if (e.type === 'error') this.error = { name: String(e.error?.name ?? 'Error'), message: String(e.error?.data?.message ?? e.error?.name ?? 'OpenCode reported an error') };
  }
  get answer(): string | null {
    const text = this.texts.join('');
    return text === '' ? null : text;
  }
}

async function runTurn(flavour: OpencodeFlavour, req: StructuredRunRequest): Promise<StructuredTurnResult> {
  const flags = sessionFlags(flavour, req);
  const resumeArgs: string[] = [];
  if (req.mode === 'resume') {
    if (!req.sessionId) throw new CalError('internal', `${flavour.command} resume without a session id`);
    // `-s` with an id the store lacks fails late and vaguely: check first.
    if (!(await sessionExists(flavour, req.cli, storeEnv(flavour, flags.env), req.sessionId))) {
      throw new CalError('resume_unavailable', `${flavour.label}'s store has no session ${req.sessionId} any more (deleted, or XDG_DATA_HOME changed)`);
    }
    resumeArgs.push('--session', req.sessionId);
  } else if (req.sessionId) {
    // The first turn runs in a session of an id derived from the handle's own (made empty just
    // before, store.ts), so a cal that dies mid-turn leaves a session recover finds by the handle.
    const sessionId = sessionIdFor(req.sessionId);
    await createSession(flavour, req.cli, storeEnv(flavour, flags.env), req.config.cwd, sessionId);
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
  if (run.timedOut) throw new CalError('timeout', `${flavour.command} run gave no end within ${Math.round(req.timeoutMs / 1000)}s`);
  const said = stderrTail(run.stderr, flags.env);
  const sessionId = stream.sessionId;
  if (!sessionId) throw new CalError('turn_failed', `${flavour.command} run ended (exit ${run.exitCode ?? run.signal}) before it named a session${said ? `: ${said}` : ''}`);
  const expected = req.mode === 'resume' ? req.sessionId : req.sessionId ? sessionIdFor(req.sessionId) : null;
  if (expected && sessionId !== expected) {
    throw new CalError('resume_unavailable', `${flavour.command} run answered in session ${sessionId}, not in ${expected} it was told to use`);
  }
  const transcriptPath = mirrorPath(flavour, flags.env, sessionId);
  await syncMirror(flavour, transcriptPath, req.cli, { kind: mirrorKind(flavour), sessionId, executable: req.cli.realPath, env: storeEnv(flavour, flags.env), mcpServers: mcpServerNames(flavour, req.config) });
  const base = { sessionId, tools: [], transcriptPath };
  if (req.signal?.aborted || run.signal === 'SIGINT' || stream.error?.name === 'MessageAbortedError') {
    return { ...base, status: 'interrupted', answer: null, error: stream.error?.message ?? 'interrupted' };
  }
  if (stream.error) return { ...base, status: 'failed', answer: null, error: stream.error.message };
  if (run.exitCode !== 0 || stream.lastFinish === null || stream.lastFinish === 'tool-calls') {
    return { ...base, status: 'failed', answer: null, error: `${flavour.command} run ended with exit status ${run.exitCode ?? run.signal} without finishing its turn${said ? `: ${said}` : ''}` };
  }
  return { ...base, status: 'completed', answer: stream.answer, error: null };
}

// `opencode run` (1.18.33) gives a message's first character no meaning: "/init", "/clear",
// "/compact", "!echo hi" and "exit" reached the model as text (its commands go by `--command`).
// `kilo run` (7.7.7) the same, measured: see docs/kilo.md.
export function structuredOf(flavour: OpencodeFlavour): StructuredTransport {
  return { run: (req) => runTurn(flavour, req), messageGuard: TEXT_ONLY_GUARD };
}

/**
 * `opencode acp` (1.18.33; `kilo acp` alike) takes none of `run`'s flags: the model goes in the
 * config it reads from the environment, and the tool policy is kept by cal's answers to its
 * permission requests (adapters/acp/policy.ts). The session id is the CLI's own (`session/new`).
 */
export function acpOf(flavour: OpencodeFlavour): AcpLaunch {
  return {
    command(req) {
      const { env } = sessionFlags(flavour, { ...req, config: { ...req.config, model: null } });
      const name = envName(flavour, 'CONFIG_CONTENT');
      const theirs = env[name];
      if (req.config.model) env[name] = JSON.stringify({ ...(theirs ? (JSON.parse(theirs) as object) : {}), model: req.config.model });
      return { argv: [req.cli.realPath, 'acp'], env };
    },
    messageGuard: acpMessageGuard,
  };
}
