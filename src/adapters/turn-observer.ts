import type { ToolActivity } from '../handles/tool-activity.js';
import { olderThan, recordTime } from './record-time.js';
import type { PromptMatch, TurnObservation, TurnObserver } from './types.js';

export type TurnEnd = 'completed' | 'failed' | 'interrupted' | 'lost';

/**
 * The bookkeeping every CLI's turn observer shares: unknown records are counted and skipped,
 * records older than the send are never taken for our message, and the turn moves once from
 * waiting to running (keyed by the CLI's own turn key) to ended. Which prompt record is ours is
 * decided here for every CLI (isOurPrompt). Each adapter supplies how its
 * records are classified and what starts and ends a turn in them, and may settle a running turn
 * on time alone (`settle`: an end that waits a bounded time for the transcript to catch up).
 */
export abstract class TranscriptTurnObserver<R> implements TurnObserver {
  private state: TurnObservation = { phase: 'waiting' };
  tools: ToolActivity[] = [];
  unknownRecords = 0;
  recordsSinceSend = 0;
  protected turnKey: string | null = null;
  protected lastAnswer: string | null = null;
  private readonly needle: string;
  /** The time of the record being fed (null: it carries none). */
  private recordAt: number | null = null;

  constructor(
    message: string,
    private readonly notBefore?: Date,
    private readonly match: PromptMatch = {},
  ) {
    this.needle = this.normalise(message);
  }

  get observation(): TurnObservation {
    if (this.state.phase === 'running') this.settle(Date.now());
    return this.state;
  }

  get partialAnswer(): string {
    return this.lastAnswer ?? '';
  }

  feed(value: unknown): void {
    if (this.state.phase === 'ended') return;
    this.recordAt = recordTime(value);
    if (this.state.phase === 'waiting' && this.notBefore && this.recordAt !== null && this.recordAt >= this.notBefore.getTime()) this.recordsSinceSend++;
    const rec = this.classify(value);
    if (rec === null) {
      this.unknownRecords++;
      return;
    }
    if (this.state.phase === 'waiting') {
      if (!olderThan(value, this.notBefore)) this.whileWaiting(rec);
      return;
    }
    this.whileRunning(rec);
  }

  /** The phase without settling anything on time (for the observer's own rules). */
  protected get phase(): TurnObservation['phase'] {
    return this.state.phase;
  }

  /** The record in the adapter's own terms, or null for a kind it does not know. */
  protected abstract classify(value: unknown): R | null;
  /** Text as the CLI stores it (line endings, tabs), for matching our message. */
  protected abstract normalise(text: string): string;
  /** Before our message is seen: call `begin` on the record that carries it. */
  protected abstract whileWaiting(rec: R): void;
  /** After it: collect the answer and tools, and call `end` on the turn's end record. */
  protected abstract whileRunning(rec: R): void;
  /** A running turn read at `now`: end it when a bounded wait ran out. Nothing by default. */
  protected settle(_now: number): void {}

  /** Whether a user text is (or contains) our message. */
  protected isOurs(text: string): boolean {
    return this.normalise(text).includes(this.needle);
  }

  /**
   * Whether a prompt record (the adapter has checked it is a person's prompt, not context or a
   * tool result) carries our message: its text is or contains ours, or (`firstPromptAfterSend`)
   * it is the first prompt the CLI recorded at or after the send. cal sent it just now, holding
   * the handle's lock, into a pane it owns, so that prompt is the one it sent, however the CLI
   * transformed it (Claude Code and Codex store a pasted path to an image as `[Image #1]` and the
   * image; Gemini replaces a path to any file with the file). A record without a time of its
   * own is matched by its text only.
   */
  protected isOurPrompt(text: string): boolean {
    if (this.isOurs(text)) return true;
    return this.match.firstPromptAfterSend === true && this.notBefore !== undefined && this.recordAt !== null && this.recordAt >= this.notBefore.getTime();
  }

  protected begin(turnKey: string | null): void {
    this.turnKey = turnKey;
    this.state = { phase: 'running', turnKey };
  }

  protected end(status: TurnEnd, answer: string | null, error: string | null): void {
    this.state = { phase: 'ended', status, turnKey: this.turnKey, answer, error };
  }
}
