import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { writeJsonAtomic } from './fs.js';

/**
 * A request from another process (`cal cancel`) to cancel one turn: the file
 * `turns/<handle>/<turn id>.cancel`. The cal holding the handle's lock looks for it while the turn
 * runs and cancels the turn as its own Ctrl-C would; it deletes the file when the turn ends. A
 * request outlives no turn: it names the turn, never "whatever runs next".
 */
export function cancelRequestFile(turnsDir: string, turnId: string): string {
  return path.join(turnsDir, `${turnId}.cancel`);
}

export async function requestCancel(turnsDir: string, turnId: string, by: { pid: number }): Promise<void> {
  await writeJsonAtomic(cancelRequestFile(turnsDir, turnId), { turn: turnId, pid: by.pid, requestedAt: new Date().toISOString() });
}

/** One stat, cheap enough to ask a few times a second for the length of a turn. */
export function cancelRequested(turnsDir: string, turnId: string): boolean {
  return existsSync(cancelRequestFile(turnsDir, turnId));
}

export function clearCancelRequest(turnsDir: string, turnId: string): void {
  rmSync(cancelRequestFile(turnsDir, turnId), { force: true });
}
