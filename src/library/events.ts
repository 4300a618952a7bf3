import { setTimeout as sleep } from 'node:timers/promises';
import type { StateStore } from '../state/store.js';
import type { CalEvent, EventsOptions } from './types.js';

/**
 * A handle's lifecycle events from its log, in order. Without `follow` it ends after the ones
 * recorded when it reached the end; with `follow` it reads the log again every `pollMs` until
 * the signal aborts (then it ends quietly: stopping a follow is not an error).
 */
export async function* handleEvents(store: StateStore, ref: string, opts: EventsOptions = {}): AsyncGenerator<CalEvent, void, undefined> {
  const handle = await store.loadHandle(ref);
  const pollMs = opts.pollMs ?? 250;
  let seen = 0;
  for (;;) {
    if (opts.signal?.aborted) return;
    const events = (await store.readEvents(handle.id)) as CalEvent[];
    for (const event of events.slice(seen)) yield event;
    seen = Math.max(seen, events.length);
    if (!opts.follow) return;
    try {
      await sleep(pollMs, undefined, opts.signal ? { signal: opts.signal } : undefined);
    } catch {
      return; // aborted
    }
  }
}
