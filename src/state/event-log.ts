import { z } from '../util/zod.js';
import { readJsonLinesSince, type LogCursor } from './fs.js';

/** One line of a handle's event log (`<id>.events.jsonl`), as sessions/context.ts writes it. */
const EventRecord = z.object({
  time: z.string(),
  handle: z.string(),
  event: z.string(),
  turn: z.string().optional(),
  detail: z.record(z.unknown()).optional(),
});
export type EventRecord = z.infer<typeof EventRecord>;

/**
 * The events a log gained since `cursor` (every one without it), where this read began, and
 * where the next one begins. A line that is JSON but no event (a damaged log) is passed over, as
 * a torn one is.
 */
export function eventsSince(file: string, cursor: LogCursor | null): { events: EventRecord[]; cursor: LogCursor | null; from: number } {
  const read = readJsonLinesSince(file, cursor);
  const events = read.values.flatMap((v) => {
    const parsed = EventRecord.safeParse(v);
    return parsed.success ? [parsed.data] : [];
  });
  return { events, cursor: read.cursor, from: read.from };
}

/** How many logs an EventLogs keeps read: the few handles a view polls. */
const KEPT_LOGS = 4;

/**
 * Whole event logs, read again as they grow: a view that shows a handle's events every second
 * (the TUI, through inspect) reads and parses only what the log gained since it last looked, for
 * the few logs it read last. A log that is another file now, or shorter, is read whole again.
 * Each call returns copies of the events, as a first read would.
 */
export class EventLogs {
  private readonly kept = new Map<string, { cursor: LogCursor; events: EventRecord[] }>();

  all(file: string): EventRecord[] {
    const known = this.kept.get(file);
    const read = eventsSince(file, known?.cursor ?? null);
    this.kept.delete(file);
    if (read.cursor === null) return [];
    const grew = known !== undefined && read.cursor.dev === known.cursor.dev && read.cursor.ino === known.cursor.ino && read.from === known.cursor.offset;
    const events = grew ? known.events.concat(read.events) : read.events;
    this.kept.set(file, { cursor: read.cursor, events });
    for (const oldest of this.kept.keys()) {
      if (this.kept.size <= KEPT_LOGS) break;
      this.kept.delete(oldest);
    }
    // The caller's own copies: what it does with them never changes what is kept (a copy costs a
    // tenth of parsing and checking the line again).
    return events.map(copyOf);
  }
}

function copyOf(e: EventRecord): EventRecord {
  return e.detail === undefined ? { ...e } : { ...e, detail: JSON.parse(JSON.stringify(e.detail)) as Record<string, unknown> };
}
