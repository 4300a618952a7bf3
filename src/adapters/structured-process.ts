import { execa } from 'execa';

/**
 * One turn of a CLI in its JSON mode: one process, the message on stdin (no argv size limit:
 * Linux refuses a single argument over 128 KiB), one JSON event per stdout line, handed over
 * as each line completes so `--stream` sees the turn while it runs.
 */
export interface JsonlProcessRequest {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  /** Written to stdin, which is then closed. */
  stdin: string;
  timeoutMs: number;
  /** Every stdout line that parses as JSON, in order (other lines are counted). */
  onEvent(value: unknown): void;
}

export interface JsonlProcessResult {
  exitCode: number | undefined;
  signal: string | undefined;
  timedOut: boolean;
  stderr: string;
  /** stdout lines that were not JSON. */
  otherLines: number;
}

export async function runJsonlProcess(req: JsonlProcessRequest): Promise<JsonlProcessResult> {
  const child = execa(req.argv[0] as string, req.argv.slice(1), {
    cwd: req.cwd,
    env: req.env,
    extendEnv: false,
    input: req.stdin,
    reject: false,
    timeout: req.timeoutMs,
    buffer: { stdout: false, stderr: true },
    maxBuffer: 16 << 20,
  });
  let pending = '';
  let otherLines = 0;
  const line = (text: string) => {
    if (!text.trim()) return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      otherLines++;
      return;
    }
    req.onEvent(value);
  };
  child.stdout?.setEncoding('utf8');
  child.stdout?.on('data', (chunk: string) => {
    pending += chunk;
    let nl = pending.indexOf('\n');
    while (nl !== -1) {
      line(pending.slice(0, nl));
      pending = pending.slice(nl + 1);
      nl = pending.indexOf('\n');
    }
  });
  const res = await child;
  if (pending) line(pending);
  return {
    exitCode: res.exitCode,
    signal: res.signal,
    timedOut: res.timedOut,
    stderr: typeof res.stderr === 'string' ? res.stderr : '',
    otherLines,
  };
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
