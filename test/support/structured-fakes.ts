import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { calBin, repoRoot } from './clis.js';

/**
 * Helpers for the tests of the CLIs that cannot be installed here (Cursor CLI, Agy): their
 * stand-ins in test/fakes/, written from the documented interfaces only, record every invocation.
 */
export const fakeCli = {
  cursor: path.join(repoRoot, 'test', 'fakes', 'cursor-agent.mjs'),
  agy: path.join(repoRoot, 'test', 'fakes', 'agy.mjs'),
} as const;

/** Every JSON line a stand-in appended to its log, in order. */
export async function readLog(file: string): Promise<any[]> {
  const text = await fs.readFile(file, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/** How many runs of a stand-in (`-p`, the message last) its log shows for this message. */
export async function timesSent(log: string, text: string): Promise<number> {
  return (await readLog(log)).filter((r) => r.argv?.includes('-p') && r.argv.at(-1) === text).length;
}

/** Every file under a folder, with its contents (to look for a secret anywhere in cal's state). */
export async function allFiles(dir: string): Promise<Array<{ file: string; text: string }>> {
  const out: Array<{ file: string; text: string }> = [];
  for (const entry of await fs.readdir(dir, { withFileTypes: true, recursive: true })) {
    const full = path.join(entry.parentPath, entry.name);
    if (entry.isFile()) out.push({ file: full, text: await fs.readFile(full, 'utf8') });
  }
  return out;
}

/** A `cal` run in the background, for killing it at a fault point. */
export function spawnCal(state: string, args: string[], env: Record<string, string>): { child: ChildProcess; stderr: () => string } {
  let stderr = '';
  const child = spawn(process.execPath, [calBin, '--state-dir', state, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return { child, stderr: () => stderr };
}

export async function kill9(child: ChildProcess): Promise<void> {
  child.kill('SIGKILL');
  if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.on('exit', r));
}

/** Whether a process of this pid exists (a test's own children are reaped by Node once they end). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Waits for `check`, up to 90 s (inside the 120 s a test gets): what is waited for (a CLI started
 * from cold reaching the model) takes seconds alone and far longer beside 16 CLI starts at once
 * in CI's other worker (a `gemini -p` waited 15 s there, and the test failed). How fast is for
 * bench/, not tests.
 */
export async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 90_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
    if (await check()) return;
  }
  throw new Error(`timed out waiting for ${what}`);
}
