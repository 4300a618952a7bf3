import { appendFileSync } from 'node:fs';

/**
 * Timing marks for `npm run bench`: with CAL_TRACE_TIMING=<file> in cal's own environment, each
 * mark appends `<epoch ms, µs precision> <pid> <name>` to that file, so the benchmark can tell
 * cal's own time from the CLI's. Without the variable a mark costs one property read.
 */
const traceFile = process.env.CAL_TRACE_TIMING;

export function timingMark(name: string): void {
  if (!traceFile) return;
  try {
    appendFileSync(traceFile, `${(performance.timeOrigin + performance.now()).toFixed(3)} ${process.pid} ${name}\n`);
  } catch {
    // A trace that cannot be written never changes what cal does.
  }
}

/**
 * A mark with what cal did there as one JSON value (`npm run bench` replays the command a
 * structured turn ran as the bare CLI's side: bench/clis.mjs). Only under CAL_TRACE_TIMING,
 * which a person sets for a benchmark; the value is built only then.
 */
export function timingDetail(name: string, detail: () => unknown): void {
  if (!traceFile) return;
  try {
    appendFileSync(traceFile, `${(performance.timeOrigin + performance.now()).toFixed(3)} ${process.pid} ${name} ${JSON.stringify(detail())}\n`);
  } catch {
    // As above.
  }
}
