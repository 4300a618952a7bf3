import { setTimeout as sleep } from 'node:timers/promises';
import type { LogCursor } from '../state/fs.js';
import type { StateStore } from '../state/store.js';
import type { CalEvent, EventsOptions } from './types.js';

/**
 * A handle's lifecycle events from its log, in order. Without `follow` it ends after the ones
 * recorded when it reached the end; with `follow` it reads what the log gained every `pollMs`
 * (only that: a long log is not read again) until the signal aborts, or the handle is removed
 * (then it ends quietly: stopping a follow is not an error).
 */
export async function* handleEvents(store: StateStore, ref: string, opts: EventsOptions = {}): AsyncGenerator<CalEvent, void, undefined> {
  const handle = await store.loadHandle(ref);
  const pollMs = opts.pollMs ?? 250;
  let cursor: LogCursor | null = null;
  for (;;) {
    if (opts.signal?.aborted) return;
    const read = await store.readEventsSince(handle.id, cursor);
    cursor = read.cursor;
    for (const event of read.events) yield event as CalEvent;
    if (!opts.follow) return;
    // Removed: its log went with it (after its file), and no event will come again.
    if (cursor === null && !store.hasHandleFile(handle.id)) return;
    try {
      await sleep(pollMs, undefined, opts.signal ? { signal: opts.signal } : undefined);
    } catch {
      return; // aborted
    }
  }
}
