import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';

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
