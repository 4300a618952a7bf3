import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './clis.js';

/**
 * One row of the fault matrix (docs/fault-matrix.md), as observed by a test. Tests append rows to
 * `.tmp/fault-matrix.jsonl`; `node scripts/fault-matrix.mjs` merges them (latest row per id) into
 * docs/fault-matrix.json and renders docs/fault-matrix.md.
 */
export interface FaultRow {
  /** Stable key, e.g. `fault.tmux-server-killed`. */
  id: string;
  /** Table section: `fault`, `input`, `state`, `secret`, `parser`, `bound`. */
  area: string;
  /** What goes wrong, in words. */
  fault: string;
  /** How the test reaches it (the way a user or an attacker would). */
  how: string;
  /** What cal did, as observed (exit code, error kind, turn status, ...). */
  outcome: string;
  /** The handle (and turn records) afterwards. */
  state: string;
  /** The test file that produced the row. */
  test: string;
}

export const faultLog = path.join(repoRoot, '.tmp', 'fault-matrix.jsonl');

export function recordFault(row: FaultRow): void {
  mkdirSync(path.dirname(faultLog), { recursive: true });
  appendFileSync(faultLog, JSON.stringify({ ...row, recordedAt: new Date().toISOString() }) + '\n');
}
