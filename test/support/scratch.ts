import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/**
 * Scratch folders for tests, each under os.tmpdir() as `cal-<prefix>-XXXXXX`, removed after the
 * test file that made them (test/support/scratch-cleanup.ts, a vitest setup file). A test file's
 * own clean-up may remove one first; this catches the ones it forgets, so a CI machine keeps no
 * /tmp/cal-* from run to run. Removal at process exit is not enough: vitest ends its workers
 * without letting 'exit' handlers run. `CAL_KEEP_TEST_HOMES=1` keeps them, to read after a failure.
 */
const made = new Set<string>();

export function scratchDirSync(prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), `cal-${prefix}-`));
  made.add(dir);
  return dir;
}

export async function scratchDir(prefix: string): Promise<string> {
  return scratchDirSync(prefix);
}

/** Every scratch folder this test file made, at its end (see scratch-cleanup.ts). */
export function removeScratchDirs(): void {
  if (process.env.CAL_KEEP_TEST_HOMES === '1') return;
  for (const dir of made) {
    // A process the test started may still write there; a folder that will not go is left, not a failure.
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    } catch {}
  }
  made.clear();
}

/**
 * Removes a test's scratch folder. A CLI whose tmux server was just killed may still write its
 * config on the way out, so the removal is retried briefly.
 */
export async function removeScratch(dir: string): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await fs.rm(dir, { recursive: true, force: true }).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 300));
    if (!existsSync(dir)) return;
  }
}

/** A working folder for a CLI session under a test's scratch folder. */
export async function makeWorkDir(root: string, name = 'work'): Promise<string> {
  const dir = `${root}/${name}`;
  await fs.mkdir(dir, { recursive: true });
  return dir;
}
