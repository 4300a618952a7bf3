import { startExeca } from '../util/spawn.js';

/**
 * One turn of a CLI that prints one JSON event per stdout line (Cursor's and Agy's
 * `--output-format stream-json`): one process, stdin closed at once (the message travels in
 * argv), each event handed over as its line completes so `--stream` sees the turn while it runs.
 */
export interface NdjsonRunRequest {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  timeoutMs: number;
  /** Cancels the turn as Ctrl-C would: the CLI gets SIGINT. */
  signal?: AbortSignal;
  onEvent(value: unknown): void;
}

export interface NdjsonRunResult {
  exitCode: number | undefined;
  signal: string | undefined;
  timedOut: boolean;
  stderr: string;
  /** stdout lines that were not JSON (the last few), for error messages. */
  otherLines: string[];
}

const KEEP_OTHER_LINES = 20;

export async function runNdjson(req: NdjsonRunRequest): Promise<NdjsonRunResult> {
  const { subprocess: child } = await startExeca(req.argv[0] as string, req.argv.slice(1), {
    cwd: req.cwd,
    env: req.env,
    stdin: 'ignore',
    reject: false,
    timeout: req.timeoutMs,
    buffer: { stdout: false, stderr: true },
    maxBuffer: 16 << 20,
  });
  req.signal?.addEventListener('abort', () => child.kill('SIGINT'), { once: true });
  const otherLines: string[] = [];
  let pending = '';
  const line = (text: string) => {
    if (!text.trim()) return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      otherLines.push(text);
      if (otherLines.length > KEEP_OTHER_LINES) otherLines.shift();
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

/** Names of variables whose values are secrets (API keys, tokens): never echoed in an error. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH/i;

/** `text` with the value of every secret-looking variable of `env` replaced by [redacted]. */
export function redactSecrets(text: string, env: Record<string, string>): string {
  let out = text;
  for (const [name, value] of Object.entries(env)) {
    if (SECRET_NAME.test(name) && value.length >= 6) out = out.split(value).join('[redacted]');
  }
  return out;
}

/**
 * The last lines of a CLI's stderr that say something, at most `maxChars` long, with secrets
 * redacted: the CLI's own words for a failure.
 */
export function stderrTail(stderr: string, env: Record<string, string>, maxChars = 400): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  let tail = '';
  for (let i = lines.length - 1; i >= 0; i--) {
    const next = tail ? `${lines[i]} ${tail}` : (lines[i] as string);
    if (next.length > maxChars) break;
    tail = next;
  }
  if (!tail && lines.length > 0) tail = (lines.at(-1) as string).slice(-maxChars);
  return redactSecrets(tail, env);
}

/** Linux refuses a single argv string over 128 KiB (MAX_ARG_STRLEN), counting its NUL. */
export const MAX_ARGV_STRING_BYTES = 128 * 1024 - 1;
