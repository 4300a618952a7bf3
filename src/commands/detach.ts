import { closeSync, writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { commandIndex } from '../cli-argv.js';
import { CalError } from '../index.js';
import { renderError } from './common.js';
import { spawnChild } from '../util/spawn.js';
import { forTerminal } from '../util/terminal-text.js';

/**
 * `cal start|continue --detach` (issue 42): the turn runs in a cal of its own, started here in a
 * session of its own (no terminal's hangup or Ctrl-C reaches it), which takes the handle's lock,
 * records the turn, sends the message, follows the turn to its end and settles it, exactly as a
 * blocking call would. It tells this cal on a pipe (fd 3) once the message has left; this cal then
 * prints the handle and turn ids and exits 0, while the turn goes on. `cal wait` prints its result
 * later; if that cal dies, the turn is an unsettled one like any other, and `cal recover` settles it.
 * A failure before the message left (busy, stale_handle, not_found, ...) is this cal's own: printed
 * and exited with, as the blocking call would.
 */
const CHILD_ENV = 'CAL_DETACHED_CHILD';
const SENT_FD = 3;

/** In the detached cal: the onSent that tells the cal that started it; undefined elsewhere. */
export function detachedOnSent(): ((sent: { handle: string; turn: string }) => void) | undefined {
  if (process.env[CHILD_ENV] !== '1') return undefined;
  // Not passed on to the CLIs (their environment is cal's own, from process.env).
  delete process.env[CHILD_ENV];
  let told = false;
  return (sent) => {
    if (told) return;
    told = true;
    try {
      writeSync(SENT_FD, `${JSON.stringify({ sent })}\n`);
      closeSync(SENT_FD);
    } catch {
      // The starting cal is gone: nobody to tell, the turn goes on.
    }
  };
}

/** Runs this command line again without --detach in a detached cal, and returns once its message has left. */
export async function runDetached(opts: { json?: boolean }, messageFromStdin: boolean): Promise<number> {
  const args = process.argv.slice(2);
  const end = args.indexOf('--');
  const head = (end === -1 ? args : args.slice(0, end)).filter((a) => a !== '--detach');
  const childArgs = [...head, ...(end === -1 ? [] : args.slice(end))];
  // The detached cal always answers in JSON, which this cal reads (and renders as text if asked).
  if (!head.includes('--json')) childArgs.splice(commandIndex(childArgs) + 1, 0, '--json');
  const script = process.argv[1];
  if (!script) throw new CalError('internal', 'cannot tell which cal to run for --detach');
  const child = spawnChild(process.execPath, [...process.execArgv, script, ...childArgs], {
    detached: true,
    // A message read from stdin is read by the detached cal itself, before it records the turn.
    stdio: [messageFromStdin ? 'inherit' : 'ignore', 'pipe', 'ignore', 'pipe'],
    env: { ...process.env, [CHILD_ENV]: '1' },
  });
  const out: Buffer[] = [];
  child.stdout!.on('data', (d: Buffer) => out.push(d));
  const sentPipe = child.stdio[SENT_FD] as NodeJS.ReadableStream;
  const outcome = await new Promise<{ sent: { handle: string; turn: string } } | { code: number }>((resolve, reject) => {
    createInterface({ input: sentPipe }).on('line', (line) => {
      try {
        const parsed = JSON.parse(line) as { sent?: { handle: string; turn: string } };
        if (parsed.sent) resolve({ sent: parsed.sent });
      } catch {
        // Not the line this pipe carries: ignored, the child's exit decides.
      }
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1 }));
  });
  if ('sent' in outcome) {
    child.stdout!.destroy();
    child.unref();
    const { handle, turn } = outcome.sent;
    if (opts.json) process.stdout.write(`${JSON.stringify({ handle, turn: { id: turn, status: 'sending' }, detached: { pid: child.pid } })}\n`);
    else {
      process.stdout.write(`${turn}\n`);
      process.stderr.write(`handle: ${handle}\n`);
    }
    return 0;
  }
  // It ended before its message left: what it printed is this call's outcome.
  const text = Buffer.concat(out).toString('utf8').trim();
  if (opts.json) {
    if (text) process.stdout.write(`${text}\n`);
    return outcome.code;
  }
  let printed: { handle?: string; error?: { kind: string; message: string; handle?: string }; turn?: { answer: string | null } } = {};
  try {
    printed = JSON.parse(text);
  } catch {
    return renderError(new CalError('internal', `the detached cal exited with ${outcome.code} and printed no result`), opts);
  }
  if (printed.turn?.answer) process.stdout.write(forTerminal(`${printed.turn.answer}\n`));
  const handle = printed.handle ?? (printed.error?.kind === 'not_found' ? undefined : printed.error?.handle);
  if (handle) process.stderr.write(`handle: ${handle}\n`);
  if (printed.error) process.stderr.write(`cal: ${printed.error.kind}: ${printed.error.message}\n`);
  return outcome.code;
}
