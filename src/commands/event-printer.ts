import type { CalEvent } from '../index.js';

/** `--events`: each lifecycle event as one NDJSON line on stderr (undefined without the flag). */
export function eventPrinter(opts: { events?: boolean }): ((e: CalEvent) => void) | undefined {
  if (!opts.events) return undefined;
  return (e) => process.stderr.write(JSON.stringify(e) + '\n');
}
