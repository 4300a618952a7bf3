import { closeSync, openSync, readSync, watch, type FSWatcher } from 'node:fs';
import { timingDetail, timingMark } from '../util/timing.js';
import { CalError } from '../errors.js';
import { anonymousFile, spawnToFiles, type JsonlLaunch, type Spawned } from './early-launch.js';

export type { JsonlLaunch } from './early-launch.js';

/**
 * One turn of a CLI in its JSON mode: one process, the message on stdin (no argv size limit:
 * Linux refuses a single argument over 128 KiB), one JSON event per stdout line, handed over
 * as each line completes so `--stream` sees the turn while it runs.
 *
 * The CLI's stdout and stderr are files (0600, unlinked as soon as they are open), not pipes, and
 * so is its stdin with runJsonlProcess: a cal that dies mid-turn then leaves a CLI that still has
 * its whole message and can still write, so it finishes the turn in its own transcript, where
 * `cal recover` finds it (measured: Pi dies of EPIPE on its next event when its stdout is a pipe
 * nobody reads). startJsonlProcess gives stdin a pipe instead, written once the turn's records are
 * on disk: the CLI holds the message from when the write returns (a socket buffer of its own).
 */
export interface JsonlProcessRequest extends JsonlLaunch, JsonlFollow {
  /** The CLI's whole stdin. */
  stdin: string;
  /** Called at once when the CLI process exists (its pid), so cal can record it before it waits. */
  onSpawned?(pid: number): void;
}

/** How a started CLI process is followed to its end. */
export interface JsonlFollow {
  timeoutMs: number;
  /** Every stdout line that parses as JSON, in order (other lines are counted). */
  onEvent(value: unknown): void;
  /** When aborted, the CLI gets SIGINT (as Ctrl-C in its terminal would send). */
  signal?: AbortSignal;
  /**
   * Whether the events read so far hold the CLI's own end of the turn (asked after each
   * `onEvent`). Once they do, the turn is over without waiting for the process to exit: a CLI
   * may go on with bookkeeping of its own first (claude -p writes two more transcript records and
   * exits 20-50 ms after its `result`, measured on 2.1.328), and then exits by itself.
   */
  isEnded?(): boolean;
}

export interface JsonlProcessResult {
  exitCode: number | undefined;
  signal: string | undefined;
  timedOut: boolean;
  stderr: string;
  /** stdout lines that were not JSON. */
  otherLines: number;
  /** The turn ended on its end event while the process still ran (exitCode and signal are unknown then). */
  running: boolean;
}

/**
 * A CLI process started with its stdin a pipe that nothing was written to yet: for a CLI that
 * reads its message only after its own start-up (Claude Code reads its config, then stdin,
 * then the session: measured with strace on 2.0.12, 2.1.328 and 2.1.332), so cal's bookkeeping
 * before the send runs while the CLI starts. `send` writes the input and follows the process to
 * its end; `discard` kills a process that was never sent anything.
 */
export interface HeldJsonlProcess {
  readonly pid: number | undefined;
  /** Whether the process is still waiting for its input (not sent, not ended, not discarded). */
  readonly waiting: boolean;
  send(input: string, follow: JsonlFollow): Promise<JsonlProcessResult>;
  discard(): void;
}

/** How often stdout is read while the CLI runs (--stream latency; the end is read at once). */
const READ_EVERY_MS = 40;
/** The same where the turn ends on an event (isEnded) and stdout cannot be watched: how late the end is seen. */
const END_READ_EVERY_MS = 10;

/**
 * Calls `read` as soon as the CLI writes to the file behind `fd`: Linux lets inotify watch the
 * (already unlinked) file through /proc/self/fd (measured: the event 0.1-0.5 ms after a write).
 * Null where it cannot; the reads on a timer remain either way. Not persistent: it never holds
 * the event loop.
 */
function watchWrites(fd: number, read: () => void): FSWatcher | null {
  try {
    return watch(`/proc/self/fd/${fd}`, { persistent: false }, read);
  } catch {
    return null;
  }
}

/** Reads what a file descriptor gained since the last call, from where it left off. */
function tail(fd: number): () => string {
  let position = 0;
  const buf = Buffer.alloc(1 << 16);
  const decoder = new TextDecoder('utf-8');
  return () => {
    let out = '';
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, position);
      if (n <= 0) return out;
      position += n;
      out += decoder.decode(buf.subarray(0, n), { stream: true });
    }
  };
}

/** Follows a spawned CLI to its end, handing over each stdout line as it completes. */
async function follow(proc: Spawned, req: JsonlFollow): Promise<JsonlProcessResult> {
  const readOut = tail(proc.outRead);
  let pending = '';
  let otherLines = 0;
  const drain = () => {
    pending += readOut();
    let nl = pending.indexOf('\n');
    while (nl !== -1) {
      const text = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      nl = pending.indexOf('\n');
      if (!text.trim()) continue;
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        otherLines++;
        continue;
      }
      req.onEvent(value);
    }
  };
  // With isEnded, every read of stdout also asks whether the turn is over; the exit still ends it
  // (a CLI that ends without its end event, or is killed).
  let endRead = () => undefined as void;
  const endEvent = req.isEnded ? new Promise<void>((resolve) => (endRead = resolve)) : null;
  // Never after the follow: its descriptors are closed then (and their numbers may be reused).
  let followed = false;
  const read = () => {
    if (followed) return;
    drain();
    if (req.isEnded?.()) endRead();
  };
  const watcher = req.isEnded ? watchWrites(proc.outRead, read) : null;
  const timer = setInterval(read, req.isEnded && !watcher ? END_READ_EVERY_MS : READ_EVERY_MS);
  const interrupt = () => proc.child.kill('SIGINT');
  req.signal?.addEventListener('abort', interrupt, { once: true });
  try {
    const res = await ended(proc, req.timeoutMs, endEvent);
    timingMark('structured-exited');
    // A CLI finishing after its end event does not hold a program's event loop (it ends by itself).
    if (res.running) proc.child.unref();
    clearInterval(timer);
    drain();
    if (pending.trim() && !res.running) {
      pending += '\n';
      drain();
    }
    return { ...res, stderr: tail(proc.errRead)(), otherLines };
  } finally {
    followed = true;
    clearInterval(timer);
    watcher?.close();
    req.signal?.removeEventListener('abort', interrupt);
    for (const fd of [proc.outRead, proc.errRead]) closeSync(fd);
  }
}

export async function runJsonlProcess(req: JsonlProcessRequest): Promise<JsonlProcessResult> {
  timingDetail('structured-stdin', () => req.stdin);
  const stdin = anonymousFile(req.stdin, (f) => openSync(f, 'r'));
  let proc: Spawned;
  try {
    proc = spawnToFiles(req, stdin);
  } finally {
    closeSync(stdin);
  }
  if (proc.child.pid !== undefined) req.onSpawned?.(proc.child.pid);
  return follow(proc, req);
}

/**
 * Starts a CLI whose input comes later (HeldJsonlProcess), or holds one started so already. A cal
 * that dies before `send` leaves it an empty stdin, and one that dies while writing leaves it a
 * cut one: the CLI's input format must make both no message at all (Claude's stream-json input:
 * a line that is not whole JSON, or none, sends nothing).
 */
export function startJsonlProcess(launch: JsonlLaunch, started?: Spawned): HeldJsonlProcess {
  // `started`: this launch's process, started already with its stdin a pipe (early-launch.ts).
  const proc = started ?? spawnToFiles(launch, 'pipe');
  const stdin = proc.child.stdin;
  let state: 'waiting' | 'sent' | 'discarded' = 'waiting';
  let exited = false;
  void proc.exit.then(
    () => (exited = true),
    () => (exited = true),
  );
  return {
    pid: proc.child.pid,
    get waiting() {
      return state === 'waiting' && !exited;
    },
    send(input, req) {
      if (state !== 'waiting') throw new Error(`a held CLI process was already ${state}`);
      state = 'sent';
      stdin?.end(input);
      timingMark('structured-sent');
      timingDetail('structured-stdin', () => input);
      return follow(proc, req);
    },
    discard() {
      if (state !== 'waiting') return;
      state = 'discarded';
      // Nothing was written: the CLI has read its config at most, and written nothing (strace).
      proc.child.kill('SIGKILL');
      stdin?.destroy();
      for (const fd of [proc.outRead, proc.errRead]) closeSync(fd);
    },
  };
}

/**
 * Waits for the CLI to end, or for its end event to be read (`endEvent`); past the timeout it
 * gets SIGTERM, and SIGKILL 5 s later.
 */
async function ended(proc: Spawned, timeoutMs: number, endEvent: Promise<void> | null): Promise<Pick<JsonlProcessResult, 'exitCode' | 'signal' | 'timedOut' | 'running'>> {
  let timedOut = false;
  let kill: NodeJS.Timeout | undefined;
  const term = setTimeout(() => {
    timedOut = true;
    proc.child.kill('SIGTERM');
    kill = setTimeout(() => proc.child.kill('SIGKILL'), 5000);
  }, timeoutMs);
  try {
    const exit = proc.exit.then((e) => ({ ...e, running: false }));
    const first = await (endEvent ? Promise.race([exit, endEvent.then(() => null)]) : exit);
    if (first === null) return { exitCode: undefined, signal: undefined, timedOut: false, running: true };
    return { ...first, timedOut };
  } finally {
    clearTimeout(term);
    clearTimeout(kill);
  }
}

/** A CLI's last stderr line that says something (its own error text), or ''. */
export function lastStderrLine(stderr: string): string {
  return (
    stderr
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
      .at(-1) ?? ''
  );
}

/**
 * For a run's `.catch`: a CLI binary that could not be started (ENOENT, EACCES …) is
 * cli_missing; any other error is not cal's to reword and goes on as it is.
 */
export function cliMissingIfUnstarted(file: string): (err: NodeJS.ErrnoException) => never {
  return (err) => {
    if (!err.syscall?.startsWith('spawn')) throw err;
    throw new CalError('cli_missing', `could not run ${file} (${err.code ?? err.message}): reinstall it or start a new session`);
  };
}
