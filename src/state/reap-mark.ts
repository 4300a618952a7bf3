import { lstatSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';

/**
 * When the policy last ran after a turn: the modification time of `<state>/reaped-at` (an empty
 * file). A turn that pasted into a live pane changes no pane count, so the policy it would apply
 * is the idle bound only, which a check once a minute keeps (about 100 ms of a continue's exit
 * otherwise went to listing every handle and pane on every turn; bench/run.mjs).
 */
const REAP_EVERY_MS = 60_000;

function markFile(root: string): string {
  return path.join(root, 'reaped-at');
}

/**
 * Whether the after-turn policy ran within the last minute (or `idleSeconds`, when shorter; with
 * no idle bound a paste leaves nothing to apply).
 */
export function reapedRecently(root: string, idleSeconds: number | null): boolean {
  try {
    const st = lstatSync(markFile(root));
    return st.isFile() && Date.now() - st.mtimeMs < Math.min(REAP_EVERY_MS, (idleSeconds ?? Infinity) * 1000);
  } catch {
    return false;
  }
}

/** Records that the policy ran now; a mark that cannot be written only makes the next turn reap. */
export async function markReaped(root: string): Promise<void> {
  const file = markFile(root);
  const now = new Date();
  try {
    // lutimes: a link planted in its place is not followed (its own times change, harmlessly).
    await fs.lutimes(file, now, now);
  } catch {
    // First run, or something else in its place: an empty private file, never through a link.
    await fs.writeFile(file, '', { mode: 0o600, flag: 'wx' }).catch(() => undefined);
  }
}
