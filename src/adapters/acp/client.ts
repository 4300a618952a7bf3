import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { client, ndJsonStream, RequestError, type McpServer, type StopReason } from '@agentclientprotocol/sdk';
import { CalError } from '../../errors.js';
import { stderrTail } from '../ndjson-process.js';
import type { AcpLaunch, StructuredRunRequest, StructuredTurnResult } from '../types.js';
import { acpMcpServers, allowedByPolicy, pickOption } from './policy.js';
import { AcpTurnReader, type AcpUpdate } from './updates.js';
import { keepSessionFileFromLoad } from './gemini-load.js';
import { startExeca } from '../../util/spawn.js';

/**
 * One turn over the Agent Client Protocol (v1, pinned): one agent process per turn, as on the
 * structured transport. `initialize` (the agent must answer protocol 1, and advertise
 * `loadSession` for a resume), `session/new` with the working directory and the session's MCP
 * servers on the first turn, `session/load` on a resume (its replay is history), then
 * `session/prompt`: the answer from the `agent_message_chunk` updates, the end from its
 * `stopReason`. A cancel is `session/cancel`; permission requests are answered by the tool policy.
 */
export const ACP_PROTOCOL_VERSION = 1;

/** A load's replay may go on after its answer (Gemini CLI 0.61.0): the prompt waits this long without an update. */
const REPLAY_QUIET_MS = 300;
/** …but no longer than this in all. */
const REPLAY_MAX_MS = 5_000;
/** How long an agent told `session/cancel` may take to end its prompt before it is killed. */
const CANCEL_GRACE_MS = 10_000;
/** How long an agent whose stdin closed after its turn may take to exit (it saves its session) before SIGTERM. */
const EXIT_GRACE_MS = 5_000;
/** The end of the agent's stderr kept for error messages. */
const STDERR_KEEP = 64 * 1024;

const STATUS: Record<StopReason, StructuredTurnResult['status']> = {
  end_turn: 'completed',
  cancelled: 'interrupted',
  max_tokens: 'failed',
  max_turn_requests: 'failed',
  refusal: 'failed',
};

/** Why a request failed, in the agent's words (`Internal error: No previous sessions found…`). */
function agentWords(err: unknown): string {
  if (err instanceof RequestError) {
    const data = err.data as { details?: unknown; message?: unknown } | undefined;
    const detail = typeof data?.details === 'string' ? data.details : typeof data?.message === 'string' ? data.message : '';
    return detail ? `${err.message}: ${detail}` : err.message;
  }
  return err instanceof Error ? err.message : String(err);
}

export async function runAcpTurn(req: StructuredRunRequest, launch: AcpLaunch, name: string): Promise<StructuredTurnResult> {
  const cwd = req.config.cwd;
  const { argv, env } = launch.command(req);
  if (req.mode === 'resume' && !req.sessionId) throw new CalError('internal', `${name}: an ACP resume without a session id`);
  // Through the one spawn door: PWD = cwd (util/spawn.ts); stdin is the protocol's pipe.
  const { subprocess: child } = await startExeca(argv[0] as string, argv.slice(1), {
    cwd,
    env,
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
    reject: false,
    buffer: false,
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_KEEP);
  });
  let exited = false;
  const exit = child.then((r) => {
    exited = true;
    return r;
  });
  if (child.pid === undefined) {
    const r = await exit;
    throw new CalError('cli_missing', `could not run ${argv[0]} (${r.code ?? r.message}): reinstall it or start a new session`);
  }
  req.onSpawned?.(child.pid);
  const words = () => stderrTail(stderr, env) || 'no message on stderr';

  const reader = new AcpTurnReader(req.message);
  let sessionId: string | null = req.mode === 'resume' ? req.sessionId : null;
  let promptSent = false;
  let cancelled = false;
  let timedOut = false;
  let lastUpdate = Date.now();
  const report = () => req.onProgress?.({ observation: promptSent ? { phase: 'running', turnKey: null } : { phase: 'waiting' }, tools: reader.toolActivity, partialAnswer: reader.partialAnswer });

  const app = client()
    .onNotification('session/update', (c) => {
      lastUpdate = Date.now();
      reader.feed(c.params.update as AcpUpdate);
      if (promptSent) report();
    })
    .onRequest('session/request_permission', (c) => {
      const optionId = cancelled ? null : pickOption(c.params.options, allowedByPolicy(req.config.toolPolicy, c.params.toolCall.kind));
      return { outcome: optionId ? { outcome: 'selected' as const, optionId } : { outcome: 'cancelled' as const } };
    });

  let kill: NodeJS.Timeout | undefined;
  const end = (signal: NodeJS.Signals) => {
    if (exited) return;
    child.kill(signal);
    kill ??= setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
  };
  const timer = setTimeout(() => {
    timedOut = true;
    end('SIGTERM');
  }, req.timeoutMs);
  let cancelTimer: NodeJS.Timeout | undefined;
  let notifyCancel: (() => void) | null = null;
  const onAbort = () => {
    cancelled = true;
    // Before the prompt the agent holds no message: it is ended. After it, it is asked to stop.
    if (!promptSent || !notifyCancel) return end('SIGTERM');
    notifyCancel();
    cancelTimer = setTimeout(() => end('SIGTERM'), CANCEL_GRACE_MS);
  };
  req.signal?.addEventListener('abort', onAbort, { once: true });

  // The agent's end before its answer rejects whatever cal waits for (the SDK does not see a pipe close as an error).
  const died = exit.then(() => {
    throw new Error(`${name} exited (${words()})`);
  });
  died.catch(() => {});
  let stop: StopReason;
  try {
    const stream = ndJsonStream(Writable.toWeb(child.stdin as NodeJS.WritableStream as import('node:stream').Writable), Readable.toWeb(child.stdout as import('node:stream').Readable) as ReadableStream<Uint8Array>);
    stop = await Promise.race([
      died,
      app.connectWith(stream, async (agent) => {
        const init = await agent.request('initialize', {
          protocolVersion: ACP_PROTOCOL_VERSION,
          clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
        });
        if (init.protocolVersion !== ACP_PROTOCOL_VERSION) {
          throw new CalError('cli_unsupported', `${name} speaks ACP protocol ${init.protocolVersion}; cal speaks protocol ${ACP_PROTOCOL_VERSION}`);
        }
        const mcpServers = acpMcpServers(req.config.mcpConfigPath) as McpServer[];
        if (req.mode === 'resume') {
          if (init.agentCapabilities?.loadSession !== true) {
            throw new CalError('non_continuable', `${name} does not advertise session/load over ACP, so its session ${sessionId} cannot be resumed here; start a new session`);
          }
          beforeLoad(init.agentInfo?.name, env, sessionId as string);
          await agent.request('session/load', { sessionId: sessionId as string, cwd, mcpServers }).catch((err: unknown) => {
            throw new CalError('resume_unavailable', `${name} refused to load session ${sessionId}: ${agentWords(err)}`);
          });
          await replayQuiet(() => lastUpdate);
        } else {
          sessionId = (await agent.request('session/new', { cwd, mcpServers })).sessionId;
        }
        if (cancelled) throw new CalError('interrupted', `cancelled by the caller before ${name} took the message`);
        const id = sessionId as string;
        notifyCancel = () => void agent.notify('session/cancel', { sessionId: id }).catch(() => {});
        reader.promptSent();
        promptSent = true;
        report();
        const prompted = await agent.request('session/prompt', { sessionId: id, prompt: [{ type: 'text' as const, text: req.message }] });
        return prompted.stopReason;
      }),
    ]);
  } catch (err) {
    await closeAgent(child, exit, end);
    if (timedOut) throw new CalError('timeout', `${name} gave no end of turn within ${Math.round(req.timeoutMs / 1000)}s`);
    if (err instanceof CalError) throw err;
    if (cancelled && !promptSent) throw new CalError('interrupted', `cancelled by the caller before ${name} took the message`);
    if (!promptSent || !sessionId) throw new CalError('turn_failed', `${name} failed before it took the message: ${agentWords(err)} (${words()})`);
    // The message was sent: the turn is the agent's failure, with what it answered so far.
    return { sessionId, status: cancelled ? 'interrupted' : 'failed', answer: reader.answer, error: cancelled ? 'cancelled by the caller' : `${agentWords(err)} (${words()})`, tools: reader.toolActivity, transcriptPath: null };
  } finally {
    clearTimeout(timer);
    clearTimeout(cancelTimer);
    req.signal?.removeEventListener('abort', onAbort);
  }
  await closeAgent(child, exit, end);
  const status = STATUS[stop] ?? 'failed';
  const error = status === 'completed' ? null : status === 'interrupted' ? 'cancelled by the caller' : `${name} stopped the turn: ${stop}`;
  return { sessionId: sessionId as string, status, answer: reader.answer, error, tools: reader.toolActivity, transcriptPath: null };
}

/**
 * What a known agent's store needs before its `session/load`, by the name it gives in
 * `initialize` (so `--provider acp` running it gets the same): Gemini CLI (gemini-load.ts).
 */
function beforeLoad(agent: string | undefined, env: Record<string, string>, sessionId: string): void {
  if (agent !== 'gemini-cli') return;
  const home = env.GEMINI_CLI_HOME || env.HOME;
  if (home) keepSessionFileFromLoad(path.join(home, '.gemini'), sessionId);
}

/** Waits until the agent sent no update for REPLAY_QUIET_MS (bounded by REPLAY_MAX_MS). */
async function replayQuiet(lastUpdate: () => number): Promise<void> {
  const deadline = Date.now() + REPLAY_MAX_MS;
  for (;;) {
    const quietFor = Date.now() - lastUpdate();
    if (quietFor >= REPLAY_QUIET_MS || Date.now() >= deadline) return;
    await new Promise((r) => setTimeout(r, REPLAY_QUIET_MS - quietFor));
  }
}

/** Closes the agent's stdin (its end of the connection) and waits for it to exit, bounded. */
async function closeAgent(child: { stdin: NodeJS.WritableStream | null }, exit: Promise<unknown>, end: (s: NodeJS.Signals) => void): Promise<void> {
  child.stdin?.end();
  let grace: NodeJS.Timeout | undefined;
  await Promise.race([exit, new Promise<void>((r) => (grace = setTimeout(r, EXIT_GRACE_MS)))]);
  clearTimeout(grace);
  end('SIGTERM');
  await exit;
}
