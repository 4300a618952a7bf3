import { randomBytes } from '../util/random.js';
import { closeSync, openSync, readSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { timingMark } from '../util/timing.js';

/**
 * One turn of a CLI in its JSON mode: one process, the message on stdin (no argv size limit:
 * Linux refuses a single argument over 128 KiB), one JSON event per stdout line, handed over
 * as each line completes so `--stream` sees the turn while it runs.
 *
 * The CLI's stdin, stdout and stderr are files (0600, unlinked as soon as they are open), not
 * pipes: a cal that dies mid-turn then leaves a CLI that still has its whole message and can
 * still write, so it finishes the turn in its own transcript, where `cal recover` finds it
 * (measured: Pi dies of EPIPE on its next event when its stdout is a pipe nobody reads).
 */
export interface JsonlProcessRequest {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  /** The CLI's whole stdin. */
  stdin: string;
  timeoutMs: number;
  /** Every stdout line that parses as JSON, in order (other lines are counted). */
  onEvent(value: unknown): void;
  /** Called at once when the CLI process exists (its pid), so cal can record it before it waits. */
  onSpawned?(pid: number): void;
}

export interface JsonlProcessResult {
  exitCode: number | undefined;
  signal: string | undefined;
  timedOut: boolean;
  stderr: string;
  /** stdout lines that were not JSON. */
  otherLines: number;
}

/** How often stdout is read while the CLI runs (--stream latency; the end is read at once). */
const READ_EVERY_MS = 40;

/** A file nobody else can open: created 0600, unlinked once `open` has opened what it needs. */
function anonymousFile<T>(content: string, open: (file: string) => T): T {
  const file = path.join(os.tmpdir(), `cal-cli-${randomBytes(8).toString('hex')}`);
  writeFileSync(file, content, { mode: 0o600, flag: 'wx' });
  try {
    return open(file);
  } finally {
    unlinkSync(file);
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

export async function runJsonlProcess(req: JsonlProcessRequest): Promise<JsonlProcessResult> {
  const stdin = anonymousFile(req.stdin, (f) => openSync(f, 'r'));
  const [outWrite, outRead] = anonymousFile('', (f) => [openSync(f, 'a'), openSync(f, 'r')] as const);
  const [errWrite, errRead] = anonymousFile('', (f) => [openSync(f, 'a'), openSync(f, 'r')] as const);
  const readOut = tail(outRead);
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
  let timer: NodeJS.Timeout | undefined;
  try {
    let child: ChildProcess;
    try {
      child = spawn(req.argv[0] as string, req.argv.slice(1), { cwd: req.cwd, env: req.env, stdio: [stdin, outWrite, errWrite] });
    } finally {
      // The child holds its own copies once it is spawned.
      for (const fd of [stdin, outWrite, errWrite]) closeSync(fd);
    }
    timingMark('structured-spawned');
    if (child.pid !== undefined) req.onSpawned?.(child.pid);
    timer = setInterval(drain, READ_EVERY_MS);
    const res = await exited(child, req.timeoutMs);
    timingMark('structured-exited');
    clearInterval(timer);
    drain();
    if (pending.trim()) {
      pending += '\n';
      drain();
    }
    return { ...res, stderr: tail(errRead)(), otherLines };
  } finally {
    clearInterval(timer);
    for (const fd of [outRead, errRead]) closeSync(fd);
  }
}

/** Waits for the child to end; past the timeout it gets SIGTERM, and SIGKILL 5 s later. */
function exited(child: ChildProcess, timeoutMs: number): Promise<Pick<JsonlProcessResult, 'exitCode' | 'signal' | 'timedOut'>> {
  return new Promise((resolve, reject) => {
    let timedOut = false;
    let kill: NodeJS.Timeout | undefined;
    const term = setTimeout(() => {
      timedOut = true;
      child.kill('SIGTERM');
      kill = setTimeout(() => child.kill('SIGKILL'), 5000);
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(term);
      clearTimeout(kill);
      reject(err);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(term);
      clearTimeout(kill);
      resolve({ exitCode: code ?? undefined, signal: signal ?? undefined, timedOut });
    });
  });
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
