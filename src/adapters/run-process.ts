import { spawn } from 'node:child_process';
import { timingMark } from '../util/timing.js';

/**
 * One CLI process per structured turn, on node:child_process (execa's import alone costs more
 * than cal's whole share of a turn). What execa gave and cal relies on is kept: the complete
 * environment as given, stdin closed, a timeout (SIGTERM, then SIGKILL 5 s later), a bound on
 * the output, and the child ended with cal when cal is ended by a signal.
 */
export interface ProcessRun {
  stdout: string;
  stderr: string;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  /** The process could not be started (ENOENT, EACCES …). */
  spawnError: NodeJS.ErrnoException | null;
}

export interface ProcessOptions {
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  maxBuffer: number;
  /** When aborted, the process gets SIGINT (as Ctrl-C in its terminal would send). */
  interrupt?: AbortSignal;
  onStdout?: (chunk: Buffer) => void;
  /** Written to the child's stdin, which is then closed (without it stdin is closed at once). */
  input?: string;
  /** Called at once when the process exists (its pid), before cal waits for it. */
  onSpawned?: (pid: number) => void;
}

const FORCE_KILL_AFTER_MS = 5000;
const FORWARDED: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

export function runProcess(file: string, args: string[], opts: ProcessOptions): Promise<ProcessRun> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { cwd: opts.cwd, env: opts.env, stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    timingMark('structured-spawned');
    if (child.pid !== undefined) opts.onSpawned?.(child.pid);
    if (opts.input !== undefined && child.stdin) {
      // A child that exits before reading all of it must not crash cal with EPIPE.
      child.stdin.on('error', () => undefined);
      child.stdin.end(opts.input);
    }
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let bytes = 0;
    let timedOut = false;
    let spawnError: NodeJS.ErrnoException | null = null;
    let forceKill: NodeJS.Timeout | undefined;
    const terminate = () => {
      child.kill('SIGTERM');
      forceKill ??= setTimeout(() => child.kill('SIGKILL'), FORCE_KILL_AFTER_MS);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      terminate();
    }, opts.timeoutMs);
    const collect = (into: Buffer[]) => (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > opts.maxBuffer) return terminate();
      into.push(chunk);
    };
    // Piped by the stdio above, so both streams are there.
    const stdout = child.stdout as NonNullable<typeof child.stdout>;
    stdout.on('data', collect(out));
    stdout.on('data', (chunk: Buffer) => opts.onStdout?.(chunk));
    (child.stderr as NonNullable<typeof child.stderr>).on('data', collect(err));
    // Ended with cal: the signal is passed on, then raised again for cal's own default action.
    const onSignal = (signal: NodeJS.Signals) => {
      child.kill(signal);
      detach();
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    const onExit = () => child.kill('SIGTERM');
    const detach = () => {
      for (const s of FORWARDED) process.off(s, onSignal);
      process.off('exit', onExit);
      opts.interrupt?.removeEventListener('abort', onInterrupt);
    };
    for (const s of FORWARDED) process.on(s, onSignal);
    process.on('exit', onExit);
    const onInterrupt = () => child.kill('SIGINT');
    opts.interrupt?.addEventListener('abort', onInterrupt, { once: true });
    child.on('error', (e: NodeJS.ErrnoException) => {
      spawnError = e;
    });
    child.on('close', (code, signal) => {
      timingMark('structured-exited');
      clearTimeout(timer);
      clearTimeout(forceKill);
      detach();
      resolve({ stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), exitCode: spawnError ? null : code, signal, timedOut, spawnError });
    });
  });
}
