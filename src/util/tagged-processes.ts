import { readdirSync, readFileSync } from 'node:fs';
import { processExited } from './process-identity.js';

/**
 * Processes that carry one environment tag (`NAME=value` in /proc/<pid>/environ). A pane's
 * processes keep the tag cal gave the pane's environment however they detach: a shell tool's
 * `setsid sleep`, an MCP server that ignores SIGHUP, children re-parented to init when the CLI
 * was SIGKILLed. Linux only; elsewhere nothing is found.
 */
export async function processesTagged(tag: string): Promise<number[]> {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const needle = `${tag}\0`;
  const found: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    // Read synchronously: one environ is a few small system calls, and a machine runs hundreds of
    // processes; through the thread pool (four round trips a file) the scan took 20-40 ms here.
    let environ = '';
    try {
      environ = readFileSync(`/proc/${pid}/environ`, 'latin1');
    } catch {
      // gone meanwhile, or another user's
    }
    if (environ.includes(needle) || environ.endsWith(tag)) found.push(pid);
  }
  return found;
}

/** True while the process exists and is not a zombie (a zombie has exited: it only waits to be reaped). */
export async function processRunning(pid: number): Promise<boolean> {
  return !processExited(pid);
}

/**
 * Ends every process carrying the tag: SIGTERM, then SIGKILL for those still there shortly
 * after, and returns once they have exited (bounded by `exitWaitMs`): a caller that relaunches
 * the session next must never meet the old process still holding it.
 */
export async function endTagged(tag: string, graceMs = 500, exitWaitMs = 5000): Promise<number> {
  const pids = await processesTagged(tag);
  const signal = (pid: number, sig: NodeJS.Signals) => {
    try {
      process.kill(pid, sig);
      return true;
    } catch {
      return false;
    }
  };
  const alive = pids.filter((pid) => signal(pid, 'SIGTERM'));
  if (alive.length === 0) return 0;
  await new Promise((r) => setTimeout(r, graceMs));
  for (const pid of alive) signal(pid, 'SIGKILL');
  const deadline = Date.now() + exitWaitMs;
  let left = alive;
  while (left.length > 0 && Date.now() < deadline) {
    left = (await Promise.all(left.map(async (pid) => ((await processRunning(pid)) ? pid : null)))).filter((pid): pid is number => pid !== null);
    if (left.length > 0) await new Promise((r) => setTimeout(r, 50));
  }
  return alive.length;
}
