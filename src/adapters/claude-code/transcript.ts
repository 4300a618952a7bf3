import type { ToolActivity } from '../../handles/tool-activity.js';
import { TranscriptTurnObserver } from '../turn-observer.js';
import type { PromptMatch } from '../types.js';
import {
  INTERRUPT_PREFIX,
  STOPPED_BY_HOOK_PREFIX,
  STOP_HOOK_FEEDBACK_PREFIX,
  ToolResultBlock,
  ToolUseBlock,
  blockedPrompt,
  classifyRecord,
  normaliseForMatch,
  resultText,
  toolFromUse,
  userText,
  type AssistantRecord,
  type KnownClaudeRecord,
  type UserRecord,
} from './records.js';
import { parseStopSignal, type StopSignal } from './signals.js';
import { compareVersions } from '../versions.js';

export { classifyRecord, normaliseForMatch, userText } from './records.js';

/**
 * The first release that writes `system/stop_hook_summary` once a turn's Stop hooks have all
 * run (measured: absent on 2.0.37, present on 2.0.42, nothing published between). With cal's
 * Stop hook in place that record ends the turn in the transcript itself, on every release from
 * here on, also those that write no `turn_duration`.
 */
export const STOP_SUMMARY_SINCE = '2.0.42';
/** The first release that writes `system/turn_duration` (design §5: releases before 2.1.1 never do). */
export const TURN_DURATION_SINCE = '2.1.1';
/**
 * Releases without the summary: how long our Stop signal waits for a user's own Stop hook to
 * make Claude go on ("Stop hook feedback", measured 30 ms after our hook on 2.0.76) before it
 * ends the turn by itself.
 */
export const STOP_GRACE_MS = 150;
/**
 * Releases with the summary: how long our Stop signal waits for it before ending the turn by
 * itself. The summary waits for every Stop hook, and Claude Code gives a hook 60 s by default.
 */
export const STOP_SUMMARY_WAIT_MS = 65_000;
/**
 * How long past the end of a turn (summary or signal) the final assistant record may take to
 * be flushed before the turn ends without it: on the Stop hook's copy of the text, else failed.
 */
export const ANSWER_FLUSH_MS = 5000;

/**
 * Follows one turn: the first human user record containing our message, then its end (design
 * §5). Completed: `system/turn_duration`, or the end of the turn's Stop hooks (the transcript's
 * `stop_hook_summary`, or cal's own Stop hook signal) once the transcript holds the final answer;
 * releases before 2.1.1 never write `turn_duration`, 2.1.29 only for turns of 30 s or more (2.1.196
 * and later after every turn).
 * Failed: an API-error assistant, or a prompt a UserPromptSubmit hook blocked or stopped.
 * Interrupted: an interrupt record. Lost: a newer human prompt (by promptId, or, in releases whose
 * user records carry none, any later human prompt).
 * Print mode (`claude -p`, the structured transport) writes no `turn_duration` and runs no
 * hook cal gave it; its process ends the turn with `cost-state`: completed when the last reply
 * was the final answer, lost when the process left in the middle of the turn (after a tool call).
 */
export class ClaudeTurnObserver extends TranscriptTurnObserver<KnownClaudeRecord> {
  private readonly toolIndex = new Map<string, ToolActivity>();
  /** This turn's user records that carried tool results: text that follows one is the tool's own (a skill's prose). */
  private readonly toolResultRecords = new Set<string>();
  /** Our message as the CLI stores it. */
  private readonly ourText: string;
  /** Whether the turn key is the CLI's promptId (else our user record's uuid, or none). */
  private keyedByPrompt = false;
  /** Whether any assistant record of this turn was read (a resumed TUI writes cost-state first). */
  private replied = false;
  /** Our user record: its uuid, when it was written, the session and the release that wrote it. */
  private ours: { uuid: string | null; at: number | null; sessionId: string | null; writesSummary: boolean; version: string | null } | null = null;
  /** The turn's latest message is assistant output that calls no tool: the final answer so far. */
  private answerReady = false;
  /** Stop signals read before our user record was (the two files are read independently). */
  private readonly earlyStops: StopSignal[] = [];
  /** Our Stop signals for this turn, and Stops a user's hook made Claude go on from. */
  private stopsRun = 0;
  private stopsBlocked = 0;
  private feedbackSinceSummary = false;
  private lastStop: { signal: StopSignal; seenAt: number } | null = null;
  /** When the transcript or the signal said the turn stopped, while its answer is not in yet. */
  private stoppedAt: number | null = null;
  /** A hook stopped the turn (the CLI asks the model nothing more): its end is a failure. */
  private hookStop: string | null = null;

  constructor(message: string, notBefore?: Date, match?: PromptMatch) {
    super(message, notBefore, match);
    this.ourText = normaliseForMatch(message);
  }

  protected classify(value: unknown): KnownClaudeRecord | null {
    const rec = classifyRecord(value);
    return rec.kind === 'unknown' ? null : rec;
  }

  protected normalise(text: string): string {
    return normaliseForMatch(text);
  }

  feedSignal(value: unknown): void {
    if (this.phase === 'ended') return;
    const signal = parseStopSignal(value);
    if (!signal) return;
    if (this.phase === 'waiting') {
      // Only the newest few can be ours; a signal file holds one Stop per turn ever run.
      this.earlyStops.push(signal);
      if (this.earlyStops.length > 8) this.earlyStops.shift();
      return;
    }
    this.onStop(signal, Date.now());
  }

  protected whileWaiting(rec: KnownClaudeRecord): void {
    if (rec.kind === 'system') {
      const blocked = blockedPrompt(rec.record);
      if (blocked && this.isOurPrompt(blocked.prompt)) {
        this.begin(null);
        this.end('failed', null, `a UserPromptSubmit hook blocked the prompt: ${blocked.reason}`);
      }
      return;
    }
    if (rec.kind !== 'user' || rec.record.isMeta || rec.record.isCompactSummary || rec.record.sourceToolUseID !== undefined) return;
    const text = userText(rec.record);
    // Claude's own interrupt note is not a prompt, unless our message itself starts that way.
    if (text === null || (text.startsWith(INTERRUPT_PREFIX) && !this.ourText.startsWith(INTERRUPT_PREFIX))) return;
    if (rec.record.origin && rec.record.origin.kind !== 'human') return;
    if (!this.isOurPrompt(text)) return;
    const at = rec.record.timestamp ? Date.parse(rec.record.timestamp) : NaN;
    const version = rec.record.version;
    let writesSummary = true;
    try {
      if (version) writesSummary = compareVersions(version, STOP_SUMMARY_SINCE) >= 0;
    } catch {
      // not a release number: assume the newer behaviour
    }
    this.ours = { uuid: rec.record.uuid ?? null, at: Number.isNaN(at) ? null : at, sessionId: rec.record.sessionId ?? null, writesSummary, version: version ?? null };
    // The turn's key is the CLI's prompt id; releases without one (2.1.29 and older) key it by
    // its user record's own uuid.
    this.keyedByPrompt = rec.record.promptId !== undefined;
    this.begin(rec.record.promptId ?? rec.record.uuid ?? null);
    const early = this.earlyStops.splice(0);
    for (const signal of early) this.onStop(signal, Date.now());
  }

  protected whileRunning(rec: KnownClaudeRecord): void {
    // A bounded wait that ran out before this record was read ended the turn before it.
    this.settle(Date.now());
    if (this.phase !== 'running') return;
    switch (rec.kind) {
      case 'assistant':
        this.onAssistant(rec.record);
        break;
      case 'user':
        this.onUser(rec.record);
        break;
      case 'hookStopped':
        this.hookStop = `the ${rec.hook} hook stopped the turn: ${rec.reason}`;
        break;
      case 'system':
        if (rec.record.subtype === 'turn_duration' && this.hookStop !== null) this.end('failed', null, this.hookStop);
        else if (rec.record.subtype === 'turn_duration') this.end('completed', this.lastAnswer, null);
        else if (rec.record.subtype === 'stop_hook_summary') this.onStopSummary();
        break;
      case 'processEnd':
        // Before any reply it is a resumed TUI's start-up record, not an end.
        if (!this.replied) break;
        if (this.hookStop !== null) this.end('failed', null, this.hookStop);
        else if (this.answerReady && this.lastAnswer !== null) this.end('completed', this.lastAnswer, null);
        else this.end('lost', null, 'the CLI process left the session before the turn ended');
        break;
      default:
        break;
    }
    if (this.phase === 'running') this.settle(Date.now());
  }

  protected override settle(now: number): void {
    const last = this.lastStop;
    if (this.stoppedAt === null && last && this.stopsRun > this.stopsBlocked) {
      // Our own signal: the end of the turn where the transcript has not said so (yet).
      const wait = this.ours?.writesSummary === false ? STOP_GRACE_MS : STOP_SUMMARY_WAIT_MS;
      if (now - last.seenAt >= wait) this.stoppedAt = last.seenAt;
    }
    if (this.stoppedAt === null) return;
    if (this.answerReady && this.lastAnswer !== null) {
      this.end('completed', this.lastAnswer, null);
      return;
    }
    if (now - this.stoppedAt < ANSWER_FLUSH_MS) return;
    const hookAnswer = last?.signal.lastAssistantMessage ?? null;
    if (hookAnswer !== null) {
      this.end('completed', hookAnswer, null);
    } else {
      // The CLI said the turn stopped, but neither its transcript nor the hook holds an answer:
      // never an empty success (design §5).
      this.end('failed', null, `Claude Code ended the turn but recorded no final answer within ${ANSWER_FLUSH_MS / 1000} s`);
    }
  }

  /** All Stop hooks ran: the turn is over, unless one of them (the user's own) made Claude go on. */
  private onStopSummary(): void {
    if (this.feedbackSinceSummary) {
      this.feedbackSinceSummary = false;
      return;
    }
    this.stoppedAt ??= Date.now();
  }

  /** A Stop signal for this session's turn, ours by prompt id, else by coming after our record. */
  private onStop(signal: StopSignal, now: number): void {
    if (!this.isOurStop(signal)) return;
    this.stopsRun++;
    // From when the hook ran, when that is known: a signal read late (cal recover, a busy
    // machine) has waited its grace already.
    this.lastStop = { signal, seenAt: Math.min(now, signal.receivedAt ?? now) };
    this.settle(now);
  }

  private isOurStop(signal: StopSignal): boolean {
    const ours = this.ours;
    if (!ours) return false;
    if (ours.sessionId && signal.sessionId && signal.sessionId !== ours.sessionId) return false;
    if (this.keyedByPrompt && signal.promptId) return signal.promptId === this.turnKey;
    // No prompt ids on either side (2.1.29 and older): a Stop that ran after our user
    // record was written is this turn's, since cal sends a message only once the last one ended.
    return signal.receivedAt !== null && ours.at !== null && signal.receivedAt >= ours.at;
  }

  private onAssistant(record: AssistantRecord): void {
    const text = record.message.content
      .filter((b): b is { type: 'text'; text: string } => b.type === 'text' && typeof (b as { text?: unknown }).text === 'string')
      .map((b) => b.text)
      .join('');
    if (record.isApiErrorMessage) {
      this.end('failed', null, text || 'the CLI recorded an API error without text');
      return;
    }
    this.replied = true;
    let callsTool = record.message.stop_reason === 'tool_use';
    for (const block of record.message.content) {
      const use = ToolUseBlock.safeParse(block);
      if (use.success) {
        callsTool = true;
        const tool = toolFromUse(use.data);
        this.tools.push(tool);
        this.toolIndex.set(use.data.id, tool);
      }
    }
    // One response with several blocks arrives as several records with the same message id;
    // some releases (2.1.29) write `stop_reason: null` on every one, so a tool call is what
    // says more is coming.
    if (text) this.lastAnswer = text;
    this.answerReady = !callsTool;
  }

  private onUser(record: UserRecord): void {
    const content = record.message.content;
    if (Array.isArray(content)) {
      for (const block of content) {
        const result = ToolResultBlock.safeParse(block);
        if (result.success) {
          // A tool result goes back to the model: the answer so far is not the final one.
          this.answerReady = false;
          if (record.uuid) this.toolResultRecords.add(record.uuid);
          const tool = this.toolIndex.get(result.data.tool_use_id);
          if (tool) {
            tool.output = resultText(result.data);
            tool.status = result.data.is_error ? 'error' : 'completed';
          }
        }
      }
    }
    const text = userText(record);
    if (text === null) return;
    if (text.startsWith(STOP_HOOK_FEEDBACK_PREFIX)) {
      // A Stop hook made Claude go on: what it said so far is not the end, nor that Stop.
      if (!this.feedbackSinceSummary) this.stopsBlocked++;
      this.feedbackSinceSummary = true;
      this.answerReady = false;
      this.stoppedAt = null;
      return;
    }
    if (text.startsWith(INTERRUPT_PREFIX)) {
      this.end('interrupted', this.lastAnswer, 'the turn was interrupted');
      return;
    }
    if (text.startsWith(STOPPED_BY_HOOK_PREFIX)) {
      this.end('failed', null, `a UserPromptSubmit hook stopped the prompt: ${text.slice(STOPPED_BY_HOOK_PREFIX.length).replace(/^:\s*/, '')}`);
      return;
    }
    // Records the CLI injects (meta, compaction summaries, a tool's own text such as a skill's
    // prose after the Skill tool, other origins) are never a new prompt. A skill's prose is marked
    // by sourceToolUseID where the release writes it; where it does not, it still follows the
    // Skill tool's result record directly, which a person's next prompt never does (that follows
    // the reply to the result, or the interrupt note, which ends the turn above).
    const followsToolResult = typeof record.parentUuid === 'string' && this.toolResultRecords.has(record.parentUuid);
    const human = !record.isMeta && !record.isCompactSummary && record.sourceToolUseID === undefined && !followsToolResult && (!record.origin || record.origin.kind === 'human');
    if (!human || (record.uuid && record.uuid === this.ours?.uuid)) return;
    const newer = record.promptId ? record.promptId !== this.turnKey : !this.keyedByPrompt;
    if (!newer) return;
    if (this.neverWritesTurnEnd() && this.answerReady && this.lastAnswer !== null) {
      // A release that writes no end record (2.0.x) ended this turn with its final reply where
      // no Stop signal was kept (a session cal did not run): the next prompt is the proof.
      this.end('completed', this.lastAnswer, null);
      return;
    }
    this.end('lost', null, 'a newer prompt started before this turn recorded its end');
  }

  /** Releases before TURN_DURATION_SINCE write no `turn_duration` (nor, without hooks, any other end). */
  private neverWritesTurnEnd(): boolean {
    const version = this.ours?.version;
    if (!version) return false;
    try {
      return compareVersions(version, TURN_DURATION_SINCE) < 0;
    } catch {
      return false;
    }
  }
}
