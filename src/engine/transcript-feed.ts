import type { TurnObserver } from '../adapters/types.js';
import { readJsonlFrom } from '../transcripts/jsonl-tail.js';

export interface FeedResult {
  /** Where the next read starts: just past the record that ended the turn, else past all read. */
  offset: number;
  ended: boolean;
  /** The file is shorter than the offset: it was replaced or truncated. */
  truncated: boolean;
  /** No file (or no regular file) is there: not written yet, or deleted. */
  missing: boolean;
}

/**
 * The one read-feed-advance loop over a CLI's transcript: reads from `offset` chunk by chunk
 * (a long transcript is never loaded whole) up to what the file holds now, feeds each record to
 * the observer in file order and stops right after the record that ends the turn, so the next
 * turn's records stay unread. Lines that are not records (torn, oversized, garbage) are passed
 * over too: otherwise more of them than one read takes would be read again on every poll.
 */
export async function feedTranscript(
  file: string,
  offset: number,
  observer: TurnObserver,
  onRecord?: () => Promise<void> | void,
): Promise<FeedResult> {
  for (;;) {
    const read = await readJsonlFrom(file, offset);
    if (read.truncated) return { offset, ended: false, truncated: true, missing: false };
    if (read.missing) return { offset, ended: false, truncated: false, missing: true };
    for (const rec of read.records) {
      observer.feed(rec.value);
      offset = rec.endOffset;
      await onRecord?.();
      if (observer.observation.phase === 'ended') return { offset, ended: true, truncated: false, missing: false };
    }
    if (read.offset === offset) return { offset, ended: false, truncated: false, missing: false };
    offset = read.offset;
  }
}

/**
 * Feeds the records a CLI's hooks appended to the session's signal file (a second, independent
 * end-of-turn signal) to the observer. Returns the new offset.
 */
export async function feedSignals(file: string, offset: number, observer: TurnObserver): Promise<number> {
  if (!observer.feedSignal) return offset;
  for (;;) {
    // The signal file is cal's own (homes/<id>/): never read through a link planted there.
    const read = await readJsonlFrom(file, offset, undefined, { noFollow: true });
    if (read.truncated) return offset;
    for (const rec of read.records) observer.feedSignal(rec.value);
    if (read.offset === offset) return offset;
    offset = read.offset;
  }
}
