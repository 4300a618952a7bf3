import fs from 'node:fs/promises';
import { processRuns } from '../../src/util/process-identity.js';
import { until } from './structured-fakes.js';

/**
 * Until the handle's last structured CLI, still exiting when cal returned, is gone, as it is by
 * the time a person types the next message: cal's entry starts the next one early only then
 * (src/sessions/early-start.ts), since what it writes as it exits would discard an early one.
 */
export async function lastCliExited(inspect: () => Promise<any>): Promise<void> {
  const proc = (await inspect()).provider.cliProcess as { pid: number; startTime: string | null } | null | undefined;
  if (proc) await until(() => !processRuns(proc.pid, proc.startTime), `the last CLI (${proc.pid}) to exit`, 20_000);
}

/** A timing trace's lines (CAL_TRACE_TIMING) and their mark names, in order. */
export async function traceMarks(file: string): Promise<{ lines: string[]; marks: string[] }> {
  const lines = (await fs.readFile(file, 'utf8')).split('\n').filter(Boolean);
  return { lines, marks: lines.map((l) => l.split(' ')[2] ?? '') };
}

/** Why an early CLI went unused, from a trace's lines: the message of a failed expectation. */
export const unusedReasons = (lines: string[]): string => lines.filter((l) => l.includes('early-launch-unused')).join('\n');
