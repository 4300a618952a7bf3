import { z } from '../../util/zod.js';
import { CalError } from '../../errors.js';
import type { ToolActivity } from '../../handles/tool-activity.js';
import { lastStderrLine, runJsonlProcess } from '../structured-process.js';
import type { StructuredRunRequest, StructuredTransport, StructuredTurnResult, TurnProgress } from '../types.js';
import { sessionFileFor, sessionFlags } from './launch.js';
import { AssistantMessage, contentText, SessionHeader, ToolCallBlock, toolFromCall, ToolResultMessage } from './session.js';
import { ALL_TEXT, type MessageGuard } from '../message-guard.js';

/**
 * Structured transport (research: gemini-pi-cli.md P2, measured on 0.73.1): one
 * `pi --mode json --session <file>` process per turn, the same file for every turn (chosen up
 * front for the first, as the tmux adapter chooses it; found by its header id after). The event
 * stream starts with the session header, then `agent_start` … `message_end` … `agent_end`.
 *
 * Pi exits 0 in JSON mode also when the model failed, so the turn's outcome is the last
 * assistant message of the last `agent_end` that no `auto_retry_start` followed: `stopReason`
 * `stop`/`length` → completed, `error` → failed with Pi's `errorMessage`, `aborted` →
 * interrupted.
 */
const Header = SessionHeader;
const MessageEnd = z.object({ type: z.literal('message_end'), message: z.object({ role: z.string() }).passthrough() });
const AgentEnd = z.object({ type: z.literal('agent_end') });
const RetryStart = z.object({ type: z.literal('auto_retry_start') });
const RetryEnd = z.object({ type: z.literal('auto_retry_end'), success: z.boolean(), finalError: z.string().optional() });
// message_update follows every model delta (measured): up to 0.73.1 it carries the assistant
// message so far (`message`); 1.x carries only the event (`assistantMessageEvent`: text_start,
// text_delta with its `delta`, …), so the text so far is the deltas joined since message_start.
const MessageUpdate = z.object({
  type: z.literal('message_update'),
  message: z.object({ role: z.string(), content: z.union([z.string(), z.array(z.object({ type: z.string() }).passthrough())]).optional() }).passthrough(),
});
const MessageDelta = z.object({
  type: z.literal('message_update'),
  assistantMessageEvent: z.object({ type: z.string(), delta: z.string().optional() }).passthrough(),
});
const MessageStart = z.object({ type: z.literal('message_start'), message: z.object({ role: z.string() }).passthrough() });
const KnownOther = z.object({
  type: z.enum(['agent_start', 'agent_settled', 'turn_start', 'turn_end', 'message_start', 'tool_execution_start', 'tool_execution_update', 'tool_execution_end', 'queue_update', 'compaction_start', 'compaction_end']),
});

/** Follows one `--mode json` event stream: the session id, text and tool calls so far, the end. */
export class PiStream implements TurnProgress {
  sessionId: string | null = null;
  /** The last assistant message, and whether an `agent_end` closed the run after it. */
  last: z.infer<typeof AssistantMessage> | null = null;
  ended = false;
  retryError: string | null = null;
  tools: ToolActivity[] = [];
  partialAnswer = '';
  unknownEvents = 0;
  /** 1.x: the text deltas of the assistant message being streamed. */
  private deltaText = '';
  private readonly toolIndex = new Map<string, ToolActivity>();

  /**
   * The run is over with an answer: an `agent_end` whose last reply stopped with `stop` or
   * `length`. Pi has written that reply to its session file by then (at its `message_end`) and
   * only exits after it. An `agent_end` after an `error` is not: Pi decides then whether to retry
   * (`auto_retry_start`, on by default in a user's own settings); after an abort it is ending.
   */
  get answered(): boolean {
    return this.ended && (this.last?.stopReason === 'stop' || this.last?.stopReason === 'length');
  }

  get observation(): TurnProgress['observation'] {
    return this.sessionId ? { phase: 'running', turnKey: null } : { phase: 'waiting' };
  }

  feed(value: unknown): void {
    const header = Header.safeParse(value);
    if (header.success) {
      this.sessionId = header.data.id;
      return;
    }
    const end = MessageEnd.safeParse(value);
    if (end.success) {
      this.onMessage(end.data.message);
      return;
    }
    const update = MessageUpdate.safeParse(value);
    if (update.success) {
      if (update.data.message.role !== 'assistant') return;
      const text = contentText(update.data.message.content);
      if (text) this.partialAnswer = text;
      return;
    }
    const delta = MessageDelta.safeParse(value);
    if (delta.success) {
      const event = delta.data.assistantMessageEvent;
      if (event.type === 'text_delta' && event.delta) {
        this.deltaText += event.delta;
        this.partialAnswer = this.deltaText;
      }
      return;
    }
    const start = MessageStart.safeParse(value);
    if (start.success && start.data.message.role === 'assistant') this.deltaText = '';
    if (AgentEnd.safeParse(value).success) {
      this.ended = true;
      return;
    }
    if (RetryStart.safeParse(value).success) {
      // Pi retries the request: the agent_end before it did not close the run.
      this.ended = false;
      return;
    }
    const retryEnd = RetryEnd.safeParse(value);
    if (retryEnd.success) {
      if (!retryEnd.data.success) this.retryError = retryEnd.data.finalError ?? null;
      return;
    }
    if (!KnownOther.safeParse(value).success) this.unknownEvents++;
  }

  private onMessage(message: { role: string }): void {
    if (message.role === 'assistant') {
      const assistant = AssistantMessage.safeParse(message);
      if (!assistant.success) {
        this.unknownEvents++;
        return;
      }
      this.last = assistant.data;
      const text = contentText(assistant.data.content);
      if (text) this.partialAnswer = text;
      for (const block of assistant.data.content) {
        const call = ToolCallBlock.safeParse(block);
        if (!call.success) continue;
        // No status until its result arrives: --stream prints the result line once it has one.
        const { status: _running, ...tool } = toolFromCall(call.data);
        this.tools.push(tool);
        this.toolIndex.set(call.data.id, tool);
      }
    } else if (message.role === 'toolResult') {
      const result = ToolResultMessage.safeParse(message);
      const tool = result.success ? this.toolIndex.get(result.data.toolCallId) : undefined;
      if (!result.success || !tool) return;
      const output = contentText(result.data.content);
      if (output !== null) tool.output = output;
      tool.status = result.data.isError ? 'error' : 'completed';
    }
  }
}

/** Messages over this many bytes go on stdin: Linux refuses a single argument over 128 KiB. */
const ARGV_LIMIT = 100_000;

/**
 * How the message reaches Pi. Pi trims what it reads from stdin and appends its first message
 * argument to it (measured), while an argument is kept exactly. So: the message without its
 * trailing blanks on stdin, those blanks as the argument; a message that starts with blanks goes
 * whole in argv when it fits (else its leading blanks are lost). The message comes guarded
 * (piJsonGuard below, applied by the engine).
 */
export function messageDelivery(text: string): { stdin: string; argv: string[] } {
  if (/^\s/.test(text) && Buffer.byteLength(text) <= ARGV_LIMIT) return { stdin: '', argv: [text] };
  const core = text.trimEnd();
  const tail = text.slice(core.length);
  return { stdin: core, argv: tail ? [tail] : [] };
}

async function runJsonTurn(req: StructuredRunRequest): Promise<StructuredTurnResult> {
  const sessionFile = sessionFileFor(req);
  const flags = sessionFlags(req);
  const delivery = messageDelivery(req.message);
  const stream = new PiStream();
  const report = req.onProgress;
  const run = await runJsonlProcess({
    argv: [req.cli.realPath, '--mode', 'json', '--session', sessionFile, ...flags.argv, ...delivery.argv],
    env: flags.env,
    cwd: req.config.cwd,
    stdin: delivery.stdin,
    timeoutMs: req.timeoutMs,
    ...(req.onSpawned ? { onSpawned: req.onSpawned } : {}),
    ...(req.signal ? { signal: req.signal } : {}),
    onEvent(value) {
      stream.feed(value);
      report?.(stream);
    },
    // The turn ends once Pi answered, while it still exits (19-33 ms later, nothing more written,
    // measured on 1.6.0; the next turn waits for that exit). Any other end waits for the exit.
    isEnded: () => stream.answered,
  });
  if (run.timedOut) throw new CalError('timeout', `pi --mode json gave no end of run within ${Math.round(req.timeoutMs / 1000)}s`);
  const why = lastStderrLine(run.stderr) || `exit status ${run.exitCode}`;
  if (!stream.sessionId) throw new CalError('turn_failed', `pi --mode json failed before it opened session ${sessionFile}: ${why}`);
  const base = { sessionId: stream.sessionId, tools: stream.tools, transcriptPath: sessionFile, cliRunning: run.running };
  const last = stream.last;
  if (!stream.ended || !last) {
    // pi --mode json dies of a SIGINT (Ctrl-C, or cal's cancel) mid-turn without an agent_end
    // (measured on 0.73.1): the caller's cancel, not a lost CLI.
    if (run.signal === 'SIGINT' || req.signal?.aborted) return { ...base, status: 'interrupted', answer: null, error: 'pi was interrupted before the end of its run' };
    if (run.signal) throw new CalError('lost', `pi was ended by ${run.signal} before the run ended: ${why}`);
    throw new CalError('turn_failed', `pi --mode json ended (exit ${run.exitCode}) without agent_end (${stream.unknownEvents + run.otherLines} unrecognised lines): ${why}`);
  }
  switch (last.stopReason) {
    case 'stop':
    case 'length':
      return { ...base, status: 'completed', answer: contentText(last.content) ?? '', error: null };
    case 'aborted':
      return { ...base, status: 'interrupted', answer: null, error: last.errorMessage || 'the turn was interrupted' };
    case 'error':
      return { ...base, status: 'failed', answer: null, error: last.errorMessage || stream.retryError || 'Pi recorded an error without a message' };
    default:
      return { ...base, status: 'failed', answer: null, error: `pi ended the run with stopReason ${last.stopReason} and no answer` };
  }
}

/**
 * Pi's JSON mode runs a message whose very first character is '/' as a prompt template, skill or
 * extension command; a zero-width space in front keeps it text, as in its pane (measured on
 * 1.6.0: "\u200b/about" and " /help" reached the model).
 */
const piJsonGuard: MessageGuard = {
  passesOver: 'blanks',
  leads: { ...ALL_TEXT, '/': { means: "Pi's JSON mode runs a leading \"/\" as a prompt template or command", readAt: 'start', action: 'zero-width-space' } },
};

export const piStructured: StructuredTransport = { run: runJsonTurn, messageGuard: piJsonGuard };
