import { existsSync, readdirSync, readFileSync } from 'node:fs';

/**
 * The fields of /proc/<pid>/stat from the third (state) on: counted after the ")" that closes the
 * command name, which may itself hold spaces and parentheses. Throws where it cannot be read.
 */
function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/**
 * A process named by pid plus the kernel's start time of that pid, so a pid reused by another
 * process is not taken for it. Linux /proc; elsewhere the start time is unknown (null) and a
 * pid alone is trusted.
 */
export function processStartTime(pid: number): string | null {
  try {
    // Field 22 (starttime).
    return statFields(pid)[19] ?? null;
  } catch {
    return null;
  }
}

/**
 * Whether the process has ended: no such pid, or only its zombie, which a parent (or an init)
 * that has not reaped it yet keeps in the table (seen here: a pane's CLI reparented to an init
 * that reaps late). A process cal may not signal (EPERM) still runs; where there is no /proc, a
 * pid that answers is taken as running.
 */
export function processExited(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
  try {
    // Field 3 (state).
    const state = statFields(pid)[0];
    return state === 'Z' || state === 'X';
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' && existsSync('/proc/self/stat');
  }
}

/** Whether `pid` is a zombie whose parent, `parent`, has not reaped it (Linux /proc; else false). */
export function unreapedChildOf(pid: number, parent: number): boolean {
  try {
    // Fields 3 (state) and 4 (ppid).
    const [state, ppid] = statFields(pid);
    return state === 'Z' && Number(ppid) === parent;
  } catch {
    return false;
  }
}

/** Whether the kernel tells process start times (Linux /proc): then every record cal writes has one. */
const startTimesKnown = processStartTime(process.pid) !== null;

export function isProcessAlive(pid: number, startTime: string | null): boolean {
  // kill(0) and kill(-1) address process groups, and a fraction is no pid: none names a holder.
  if (!Number.isInteger(pid) || pid <= 0) return false;
  // A record without a start time where cal always writes one was not written by a cal here
  // (pid 1 with no start time would otherwise hold a lock forever).
  if (startTime === null && startTimesKnown) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  if (startTime === null) return true;
  const now = processStartTime(pid);
  return now === null ? true : now === startTime;
}

/**
 * Whether the process named by pid and start time still runs: alive as isProcessAlive says, and
 * not a zombie (a CLI that has exited but not yet been reaped is done).
 */
export function processRuns(pid: number, startTime: string | null): boolean {
  return isProcessAlive(pid, startTime) && !processExited(pid);
}

/**
 * The CPU time, in clock ticks, of every process in the session `sid` (a tmux pane's process and
 * all it started, unless one left the session): null where there is no /proc.
 */
function sessionCpuTicks(sid: number): number | null {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return null;
  }
  let ticks = 0;
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // Fields 6 (session), 14 (utime) and 15 (stime).
      const f = statFields(Number(name));
      if (Number(f[3]) === sid) ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // Gone between the listing and the read.
    }
  }
  return ticks;
}

/**
 * Whether the processes of session `sid` used under a quarter of one core over `windowMs`: a
 * TUI waiting at its prompt (Cline CLI: 1-8%), not one working through its input (100-160%,
 * measured). Null where there is no /proc. Linux's clock tick is 1/100 s.
 */
export async function sessionIdle(sid: number, windowMs: number): Promise<boolean | null> {
  const before = sessionCpuTicks(sid);
  if (before === null) return null;
  await new Promise((resolve) => setTimeout(resolve, windowMs));
  const after = sessionCpuTicks(sid);
  return after === null ? null : (after - before) / 100 < 0.25 * (windowMs / 1000);
}
