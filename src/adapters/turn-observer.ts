import type { ToolActivity } from '../handles/tool-activity.js';
import { olderThan } from './record-time.js';
import type { TurnObservation, TurnObserver } from './types.js';

export type TurnEnd = 'completed' | 'failed' | 'interrupted' | 'lost';

/**
 * The bookkeeping every CLI's turn observer shares: unknown records are counted and skipped,
 * records older than the send are never taken for our message, and the turn moves once from
 * waiting to running (keyed by the CLI's own turn key) to ended. Each adapter supplies how its
 * records are classified and what starts and ends a turn in them.
 */
export abstract class TranscriptTurnObserver<R> implements TurnObserver {
  observation: TurnObservation = { phase: 'waiting' };
  tools: ToolActivity[] = [];
  unknownRecords = 0;
  protected turnKey: string | null = null;
  protected lastAnswer: string | null = null;
  private readonly needle: string;

  constructor(
    message: string,
    private readonly notBefore?: Date,
  ) {
    this.needle = this.normalise(message);
  }

  get partialAnswer(): string {
    return this.lastAnswer ?? '';
  }

  feed(value: unknown): void {
    if (this.observation.phase === 'ended') return;
    const rec = this.classify(value);
    if (rec === null) {
      this.unknownRecords++;
      return;
    }
    if (this.observation.phase === 'waiting') {
      if (!olderThan(value, this.notBefore)) this.whileWaiting(rec);
      return;
    }
    this.whileRunning(rec);
  }

  /** The record in the adapter's own terms, or null for a kind it does not know. */
  protected abstract classify(value: unknown): R | null;
  /** Text as the CLI stores it (line endings, tabs), for matching our message. */
  protected abstract normalise(text: string): string;
  /** Before our message is seen: call `begin` on the record that carries it. */
  protected abstract whileWaiting(rec: R): void;
  /** After it: collect the answer and tools, and call `end` on the turn's end record. */
  protected abstract whileRunning(rec: R): void;

  /** Whether a user text is (or contains) our message. */
  protected isOurs(text: string): boolean {
    return this.normalise(text).includes(this.needle);
  }

  protected begin(turnKey: string | null): void {
    this.turnKey = turnKey;
    this.observation = { phase: 'running', turnKey };
  }

  protected end(status: TurnEnd, answer: string | null, error: string | null): void {
    this.observation = { phase: 'ended', status, turnKey: this.turnKey, answer, error };
  }
}
