import type { z } from '../util/zod.js';

/**
 * The events of a CLI's JSON-lines output (`--json`, `-o stream-json`) that fit its schema, in
 * order; `unknown` counts the lines that are not JSON or fit no known event (a release that
 * changed its format shows up there, never as a crash). Blank lines are not counted.
 */
export function parseJsonLines<S extends z.ZodType>(stdout: string, schema: S): { events: Array<z.output<S>>; unknown: number } {
  const events: Array<z.output<S>> = [];
  let unknown = 0;
  for (const line of stdout.split('\n')) {
    if (!line.trim()) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      unknown++;
      continue;
    }
    const ev = schema.safeParse(value);
    if (ev.success) events.push(ev.data);
    else unknown++;
  }
  return { events, unknown };
}
