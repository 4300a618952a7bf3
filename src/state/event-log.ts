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
 * The events a log gained since `cursor` (every one without it), and where the next read begins.
 * A line that is JSON but no event (a damaged log) is passed over, as a torn one is.
 */
export function eventsSince(file: string, cursor: LogCursor | null): { events: EventRecord[]; cursor: LogCursor | null } {
  const read = readJsonLinesSince(file, cursor);
  const events = read.values.flatMap((v) => {
    const parsed = EventRecord.safeParse(v);
    return parsed.success ? [parsed.data] : [];
  });
  return { events, cursor: read.cursor };
}
