import { lstatSync } from 'node:fs';
import { z } from '../../util/zod.js';
import { CalError } from '../../errors.js';
import { feedJsonLines } from '../../util/json-lines.js';
import type { ToolActivity } from '../../handles/tool-activity.js';
import type { LaunchRequest, StructuredRunRequest, StructuredStartRequest, StructuredTransport, StructuredTurnResult } from '../types.js';
import { startHeldTurn } from '../held-turn.js';
import { cliMissingIfUnstarted, runJsonlProcess, type HeldJsonlProcess, type JsonlFollow, type JsonlLaunch } from '../structured-process.js';
import { TEXT_ONLY_GUARD } from '../message-guard.js';
import { commonOverrides } from './config.js';
import { codexEnv } from './binary.js';
import { codexHome, findRolloutById, sessionIdFromRolloutName } from './sessions.js';

/**
 * Structured transport: one `codex exec --json` process per turn, `codex exec resume --json <id> -`
 * after the first, its message on stdin (a first turn's in argv, with stdin empty: exec otherwise
 * waits for EOF and appends stdin to the prompt). The JSONL event stream on stdout gives the
 * thread id, items and the turn's end.
 */
const ExecItem = z.object({ id: z.string().optional(), type: z.string() }).passthrough();
const ExecEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('thread.started'), thread_id: z.string() }),
  z.object({ type: z.literal('turn.started') }).passthrough(),
  z.object({ type: z.literal('turn.completed') }).passthrough(),
  z.object({ type: z.literal('turn.failed'), error: z.object({ message: z.string() }).passthrough() }),
  z.object({ type: z.literal('item.started'), item: ExecItem }),
  z.object({ type: z.literal('item.updated'), item: ExecItem }),
  z.object({ type: z.literal('item.completed'), item: ExecItem }),
  z.object({ type: z.literal('error'), message: z.string() }),
]);

const AgentMessage = z.object({ type: z.literal('agent_message'), text: z.string() });
const CommandExecution = z.object({
  type: z.literal('command_execution'),
  command: z.string(),
  aggregated_output: z.string().nullable().optional(),
  status: z.string().optional(),
});
const McpToolCall = z.object({
  type: z.literal('mcp_tool_call'),
  server: z.string(),
  tool: z.string(),
  arguments: z.unknown().optional(),
  result: z
    .object({ content: z.array(z.object({ type: z.string(), text: z.string().optional() }).passthrough()).optional(), structured_content: z.unknown().optional() })
    .passthrough()
    .nullable()
    .optional(),
  error: z.object({ message: z.string() }).passthrough().nullable().optional(),
  status: z.string().optional(),
});

export interface ExecStream {
  threadId: string | null;
  ended: 'completed' | 'failed' | null;
  answer: string | null;
  error: string | null;
  /** `error` events (retries, warnings), last one last. */
  errors: string[];
  tools: ToolActivity[];
  unknownEvents: number;
}

/**
 * Follows `codex exec --json` events one at a time, as each stdout line completes: the thread
 * id, items, the answer and the turn's end so far.
 */
export class ExecStreamReader {
  readonly stream: ExecStream = { threadId: null, ended: null, answer: null, error: null, errors: [], tools: [], unknownEvents: 0 };
  // A tool item is reported when it starts (status in_progress) and again when it completes:
  // one entry per item id, updated in place, so a call shows at once and its end only once.
  private readonly toolAt = new Map<string, number>();

  /** One parsed stdout line; `undefined` for a line that was not JSON. */
  feed(value: unknown): void {
    const parsed = value === undefined ? null : ExecEvent.safeParse(value);
    if (!parsed?.success) {
      this.stream.unknownEvents++;
      return;
    }
    const out = this.stream;
    const e = parsed.data;
    switch (e.type) {
      case 'thread.started':
        out.threadId = e.thread_id;
        break;
      case 'turn.completed':
        out.ended = 'completed';
        break;
      case 'turn.failed':
        out.ended = 'failed';
        out.error = e.error.message;
        break;
      case 'error':
        out.errors.push(e.message);
        break;
      case 'item.started':
      case 'item.updated':
        this.recordTool(e.item);
        break;
      case 'item.completed': {
        const agent = AgentMessage.safeParse(e.item);
        if (agent.success) {
          out.answer = agent.data.text;
          break;
        }
        this.recordTool(e.item);
        break;
      }
      default:
        break;
    }
  }

  private recordTool(item: z.infer<typeof ExecItem>): void {
    const tool = execTool(item);
    if (!tool) return;
    const tools = this.stream.tools;
    const at = item.id !== undefined ? this.toolAt.get(item.id) : undefined;
    if (at !== undefined) tools[at] = tool;
    else {
      if (item.id !== undefined) this.toolAt.set(item.id, tools.length);
      tools.push(tool);
    }
  }
}

/** Parses `codex exec --json` stdout (one JSON event per line). */
export function parseExecStream(stdout: string): ExecStream {
  const reader = new ExecStreamReader();
  feedJsonLines(stdout, (value) => reader.feed(value));
  return reader.stream;
}

/** A tool's status as cal records it: absent while it runs (in_progress), else Codex's word for how it ended. */
function endedStatus(status: string | undefined): string | undefined {
  return status === undefined ? 'completed' : status === 'in_progress' ? undefined : status;
}

function execTool(item: z.infer<typeof ExecItem>): ToolActivity | null {
  const shell = CommandExecution.safeParse(item);
  if (shell.success) {
    const tool: ToolActivity = { kind: 'shell', name: unwrapShell(shell.data.command) };
    const status = endedStatus(shell.data.status);
    if (status !== undefined) tool.status = status;
    if (typeof shell.data.aggregated_output === 'string' && status !== undefined) tool.output = shell.data.aggregated_output;
    return tool;
  }
  const mcp = McpToolCall.safeParse(item);
  if (mcp.success) {
    const tool: ToolActivity = { kind: 'mcp', server: mcp.data.server, name: mcp.data.tool, input: mcp.data.arguments ?? null };
    const status = endedStatus(mcp.data.status);
    if (status !== undefined) tool.status = status;
    if (mcp.data.error) tool.output = mcp.data.error.message;
    else if (mcp.data.result?.content) tool.output = mcp.data.result.content.map((c) => c.text ?? JSON.stringify(c)).join('\n');
    return tool;
  }
  if (item.type === 'file_change') {
    const status = endedStatus((item as Record<string, unknown>).status as string | undefined);
    return { kind: 'tool', name: 'apply_patch', input: (item as Record<string, unknown>).changes ?? null, ...(status !== undefined ? { status } : {}) };
  }
  if (item.type === 'web_search') return { kind: 'tool', name: 'web_search', input: (item as Record<string, unknown>).query ?? null, status: 'completed' };
  return null;
}

/**
 * exec prints a shell command as one string, `/bin/bash -lc '<script>'`; the rollout keeps the
 * argv. Both are reported as the script the model asked for.
 */
export function unwrapShell(command: string): string {
  const m = /^(?:\S*\/)?(?:ba|z|da)?sh -l?c (.*)$/s.exec(command);
  if (!m?.[1]) return command;
  const word = posixWord(m[1]);
  return word ?? command;
}

/** One POSIX shell word (quotes and backslashes resolved), or null when it is not exactly one. */
function posixWord(text: string): string | null {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end === -1) return null;
      out += text.slice(i + 1, end);
      i = end + 1;
    } else if (c === '"') {
      i++;
      for (;;) {
        if (i >= text.length) return null;
        const d = text[i] as string;
        if (d === '"') break;
        if (d === '\\' && i + 1 < text.length && '$`"\\\n'.includes(text[i + 1] as string)) {
          out += text[i + 1];
          i += 2;
        } else {
          out += d;
          i++;
        }
      }
      i++;
    } else if (c === '\\') {
      if (i + 1 >= text.length) return null;
      out += text[i + 1];
      i += 2;
    } else if (/\s/.test(c)) {
      return null;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Codex's own error text on stderr: its last `Error:` line, else its last line that says something. */
export function lastErrorLine(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !/^Reading additional input from stdin/.test(l) && !/^WARNING: proceeding, even though we could not create PATH aliases/.test(l));
  const errors = lines.filter((l) => /^(Error|ERROR)\b/.test(l));
  return errors.at(-1) ?? lines.filter((l) => !/^(Stack backtrace:|\d+: )/.test(l)).at(-1) ?? '';
}

/**
 * A message longer than this goes to `codex exec` on stdin (`-`): one argument of argv holds at
 * most 128 KB on Linux, and a 200 KB message failed to launch at all.
 */
export const STDIN_MESSAGE_BYTES = 64 * 1024;

function isFile(file: string): boolean {
  try {
    return lstatSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * A resume takes its message on stdin (`-`), whatever its size, so its launch does not depend on
 * the message: it can start before cal's bookkeeping and wait for it (startExecTurn). A first
 * turn takes it in argv, on stdin only past STDIN_MESSAGE_BYTES.
 */
function messageOnStdin(req: Pick<LaunchRequest, 'mode' | 'message'>): boolean {
  return req.mode === 'resume' || Buffer.byteLength(req.message) > STDIN_MESSAGE_BYTES;
}

export function execArgv(req: LaunchRequest): string[] {
  const resume = req.mode === 'resume';
  const viaStdin = messageOnStdin(req);
  if (resume && !req.sessionId) throw new CalError('internal', 'codex exec resume without a session id');
  return [
    req.cli.realPath,
    'exec',
    ...(resume ? ['resume'] : []),
    '--json',
    '--skip-git-repo-check',
    ...commonOverrides(req.config),
    '--',
    ...(resume ? [req.sessionId as string] : []),
    viaStdin ? '-' : req.message,
  ];
}

function resumeLaunch(req: StructuredStartRequest, sessionId: string): JsonlLaunch {
  const argv = execArgv({ ...req, mode: 'resume', sessionId, message: '' });
  return { argv, env: codexEnv(req.env, req.cli.realPath), cwd: req.config.cwd };
}

/**
 * A held message goes into a pipe: one that fits an empty pipe (64 KiB on Linux) is written by
 * one write(2), so a cal that dies meanwhile never leaves codex a cut message; a larger one goes
 * through a file written whole before its codex starts, as without a held start.
 */
const HELD_MESSAGE_BYTES = 60 * 1024;

export async function runExecTurn(req: StructuredRunRequest, held?: HeldJsonlProcess): Promise<StructuredTurnResult> {
  const argv = execArgv(req);
  const startedAt = new Date(Date.now() - 1000);
  const reader = new ExecStreamReader();
  const stream = reader.stream;
  const report = req.onProgress;
  // exec's stdout and stderr are files (structured-process.ts), so the turn ends on its
  // turn.completed or turn.failed while codex still finishes (18-41 ms to its exit, measured on
  // 0.169.0, with nothing more written to the rollout); and a cal killed mid-turn leaves a codex
  // that still finishes the turn in its rollout, for `cal recover`.
  // A cancel that came before the send sends nothing.
  if (held && req.signal?.aborted) {
    held.discard();
    throw new CalError('interrupted', 'cancelled by the caller before the message was sent');
  }
  if (held?.pid !== undefined) req.onSpawned?.(held.pid);
  const follow: JsonlFollow = {
    timeoutMs: req.timeoutMs,
    // A cancel interrupts codex as Ctrl-C in its terminal would; the stream then ends the turn.
    ...(req.signal ? { signal: req.signal } : {}),
    ...(req.onSpawned ? { onSpawned: req.onSpawned } : {}),
    onEvent(value) {
      reader.feed(value);
      report?.({ observation: stream.threadId ? { phase: 'running', turnKey: null } : { phase: 'waiting' }, tools: stream.tools, partialAnswer: stream.answer ?? '' });
    },
    isEnded: () => stream.ended !== null,
  };
  // Empty for a first turn's message in argv: exec otherwise waits for EOF and appends stdin to it.
  const stdin = messageOnStdin(req) ? req.message : '';
  const run = await (held ? held.send(stdin, follow) : runJsonlProcess({ argv, env: codexEnv(req.env, req.cli.realPath), cwd: req.config.cwd, stdin, ...follow })).catch(
    cliMissingIfUnstarted(argv[0] as string),
  );
  if (run.timedOut) {
    throw new CalError('timeout', `codex exec gave no end of turn within ${Math.round(req.timeoutMs / 1000)}s`);
  }
  stream.unknownEvents += run.otherLines;
  const stderrLine = lastErrorLine(run.stderr);
  if (!stream.threadId) {
    const why = stream.errors.at(-1) || stderrLine || `exit status ${run.exitCode}`;
    if (req.mode === 'resume' && /no rollout found|thread\/resume|No saved session/i.test(`${run.stderr}\n${why}`)) {
      throw new CalError('resume_unavailable', `codex refused to resume session ${req.sessionId}: ${why}`);
    }
    if (run.signal) throw new CalError('lost', `codex exec was ended by ${run.signal} before it started a thread`);
    throw new CalError('turn_failed', `codex exec failed before it started a thread (exit ${run.exitCode}): ${why}`);
  }
  // A resumed thread goes on in its own rollout file (named by the thread id): the one found on
  // an earlier turn is taken while it is there, so a resume days later does not walk every
  // rollout of the Codex home to find it again.
  const known = req.knownTranscript;
  const transcriptPath =
    known && sessionIdFromRolloutName(known) === stream.threadId && isFile(known) ? known : await findRolloutById(codexHome(req.env), stream.threadId, startedAt);
  const base = { sessionId: stream.threadId, tools: stream.tools, transcriptPath, cliRunning: run.running };
  if (stream.ended === 'completed' && (run.running || run.exitCode === 0)) {
    return { ...base, status: 'completed', answer: stream.answer, error: null };
  }
  if (stream.ended === 'failed' || (run.exitCode ?? 0) !== 0) {
    const message = stream.error ?? stream.errors.at(-1) ?? (stderrLine || `codex exec exited with status ${run.exitCode}`);
    // Cancelled: the turn may end on its turn.failed before codex exits on the SIGINT.
    if (run.signal === 'SIGINT' || req.signal?.aborted) return { ...base, status: 'interrupted', answer: null, error: message };
    return { ...base, status: 'failed', answer: null, error: message };
  }
  throw new CalError(
    'internal',
    `codex exec ended (exit ${run.exitCode}) without turn.completed or turn.failed in its --json stream (${stream.unknownEvents} unrecognised events): the event format may have changed`,
  );
}

/**
 * Its resume is started before cal's bookkeeping (held-turn.ts), as Claude Code's: codex spends about 190 ms on its config, auth and
 * thread before it reads its prompt from stdin (measured on 0.169.0: with stdin written 400 ms
 * after the spawn, the turn ended 450-550 ms after it, against 660-730 ms when written at once).
 * A started codex that gets no message reads an empty stdin and exits 1, and one killed unsent
 * wrote nothing to its rollout (measured: SIGTERM, SIGKILL, empty stdin).
 */
export const codexStructured: StructuredTransport = {
  run: (req) => runExecTurn(req),
  // `codex exec` gives no first character a meaning (0.169.0: "/status", "/init", "!echo hi" reached the model).
  messageGuard: TEXT_ONLY_GUARD,
  start: (req) => startHeldTurn(req, resumeLaunch, runExecTurn, (run) => Buffer.byteLength(run.message) <= HELD_MESSAGE_BYTES),
  nextLaunch: (req) => (req.sessionId ? resumeLaunch(req, req.sessionId) : null),
};
