import { CalError, TurnError, type Handle, type Turn, type TurnResult } from '../index.js';
import { checkMessage } from '../library/history.js';
import { toCalError } from '../errors.js';
import type { LiveOutput } from './progress.js';
import { readUserFileSync } from '../util/user-file.js';

import type { GlobalOptions } from './spec.js';
import type { OpenOptions } from '../index.js';
import { forTerminal } from '../util/terminal-text.js';

export type { GlobalOptions } from './spec.js';

/** The library's options for a command: its state directory, or the fleet `--fleet` names (else CAL_FLEET, read by the library). */
export function openOptions(global: GlobalOptions): OpenOptions {
  const password = fleetPassword(global);
  const connection = global.fleet ?? (password !== undefined ? process.env.CAL_FLEET : undefined);
  return { stateDir: global.stateDir, ...(connection ? { fleet: { connection, ...(password !== undefined ? { password } : {}) } } : {}) };
}

/** The fleet's Redis password from `--fleet-password-file` (its first line), or undefined (the library then reads CAL_FLEET_PASSWORD). */
export function fleetPassword(global: GlobalOptions): string | undefined {
  if (global.fleetPasswordFile === undefined) return undefined;
  const password = readUserFileSync(global.fleetPasswordFile, '--fleet-password-file', 4096).split(/\r?\n/)[0] ?? '';
  if (password === '') throw new CalError('usage', `--fleet-password-file ${global.fleetPasswordFile} holds no password on its first line`);
  return password;
}

export interface OutputOptions {
  json?: boolean;
  events?: boolean;
}

/** The user's environment as it passes through to the CLI (undefined entries dropped). */
export function passThroughEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  return env;
}

/** `-` reads the message from stdin; an empty message is a usage error. */
export async function readMessage(arg: string | undefined): Promise<string> {
  if (arg === undefined) throw new CalError('usage', 'a message is required (or - to read it from stdin)');
  let message = arg;
  if (arg === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    message = Buffer.concat(chunks).toString('utf8');
  }
  return checkMessage(message);
}

export function parseSeconds(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new CalError('usage', `${flag} takes a positive number of seconds, not ${JSON.stringify(value)}`);
  return n;
}

/** `--wait` (rewritten to `--wait=forever` by the CLI) or `--wait=S`, for the library's `wait`. */
export function parseWait(value: string | true | undefined): boolean | number | undefined {
  if (value === undefined) return undefined;
  return value === true || value === 'forever' ? true : parseSeconds(value, '--wait');
}

interface SystemPromptFlags {
  systemPrompt?: string;
  systemPromptFile?: string;
}

/** `--system-prompt TEXT` or `--system-prompt-file F`, never both (checked before anything is read). */
export function checkSystemPromptFlags(opts: SystemPromptFlags): void {
  if (opts.systemPrompt !== undefined && opts.systemPromptFile !== undefined) {
    throw new CalError('usage', '--system-prompt and --system-prompt-file exclude each other');
  }
}

export async function systemPromptOf(opts: SystemPromptFlags): Promise<string | undefined> {
  return opts.systemPromptFile ? fileText(opts.systemPromptFile, '--system-prompt-file') : opts.systemPrompt;
}

export { eventPrinter } from './event-printer.js';

export function turnJson(turn: Turn): Record<string, unknown> {
  return {
    id: turn.id,
    status: turn.status,
    answer: turn.answer,
    turnKey: turn.turnKey,
    error: turn.error,
    tools: turn.tools,
  };
}

/**
 * A CLI release newer than the newest its adapter certified runs, uncertified (design §10): the
 * sentence that says so, or null for a certified one.
 */
export function uncertifiedCliText(handle: Handle): string | null {
  const cli = handle.provider.cli;
  if (cli?.support !== 'newer_than_certified') return null;
  return `${handle.provider.provider} ${cli.version} is newer than ${cli.newestCertified ?? 'the newest release'} cal certified: it runs, uncertified (cal certify --provider ${handle.provider.provider} checks it)`;
}

/** Prints a settled turn (and the failure it ended in, if any) and returns the exit code. */
export function renderTurn({ handle, turn }: TurnResult, opts: OutputOptions, failure: CalError | null = null): number {
  const uncertified = uncertifiedCliText(handle);
  // Once per command, on stderr in either mode: the answer on stdout stays the answer alone.
  if (uncertified) process.stderr.write(`cal: note: ${uncertified}\n`);
  if (opts.json) {
    const out: Record<string, unknown> = { handle: handle.id, ...(handle.host ? { host: handle.host } : {}), turn: turnJson(turn) };
    if (uncertified) out.uncertifiedCli = { version: handle.provider.cli?.version, newestCertified: handle.provider.cli?.newestCertified ?? null, message: uncertified };
    if (failure) out.error = failure.toJSON();
    process.stdout.write(JSON.stringify(out) + '\n');
  } else {
    // The answer exactly, but on a terminal without the control sequences a terminal would obey.
    if (turn.answer !== null && turn.status === 'completed') process.stdout.write(forTerminal(turn.answer.endsWith('\n') ? turn.answer : `${turn.answer}\n`));
    process.stderr.write(`handle: ${handle.id}\n`);
    if (handle.host) process.stderr.write(`host: ${handle.host}\n`);
    if (failure) process.stderr.write(forTerminal(`cal: ${failure.kind}: ${failure.message}\n`, process.stderr));
  }
  return failure ? failure.exitCode : 0;
}

/**
 * Runs one turn-taking library call with its live output and renders how it ended: a completed
 * turn, a turn that settled otherwise (failed, interrupted, lost: the records come with the
 * error), or an error before or instead of a turn.
 */
export async function renderTurnCall(call: () => Promise<TurnResult>, live: LiveOutput, opts: OutputOptions): Promise<number> {
  try {
    const result = await call();
    return renderTurn({ ...result, turn: live.done(result.turn) }, opts);
  } catch (err) {
    live.stop();
    if (err instanceof TurnError) return renderTurn(err.result, opts, err);
    return renderError(err, opts);
  } finally {
    live.stop();
  }
}

/** How long a cal told to end by SIGHUP or SIGTERM may take to settle its turn before it exits regardless. */
const END_SIGNAL_GRACE_MS = 15_000;

/**
 * Ctrl-C during a turn: the first one cancels it as the library's AbortSignal does (the CLI is
 * interrupted the way a person at its pane would, the turn settled, the handle's lock released);
 * a second one ends cal at once (the turn is then left for `cal recover`). SIGHUP (the terminal
 * went away) and SIGTERM cancel the turn the same way, since nobody is left to read its answer
 * or the caller asked cal to stop: without a handler of cal's own a library's signal handler
 * (signal-exit, loaded with the spinner) decided, and a turn was left `running` with its owner
 * gone. cal exits once the turn is settled, or END_SIGNAL_GRACE_MS later whatever the CLI does.
 */
export function cancelOnInterrupt(): AbortSignal {
  const controller = new AbortController();
  const say = (line: string) => {
    try {
      process.stderr.write(line);
    } catch {
      // A terminal that went away (EIO): nobody to tell.
    }
  };
  const onSignal = (signal: 'SIGINT' | 'SIGHUP' | 'SIGTERM', code: number) => () => {
    if (controller.signal.aborted) process.exit(code);
    if (signal === 'SIGINT') say('cal: cancelling the turn (Ctrl-C again to quit at once)\n');
    else {
      say(`cal: ${signal}: cancelling the turn\n`);
      setTimeout(() => process.exit(code), END_SIGNAL_GRACE_MS).unref();
    }
    controller.abort();
  };
  process.on('SIGINT', onSignal('SIGINT', 130));
  process.on('SIGHUP', onSignal('SIGHUP', 129));
  process.on('SIGTERM', onSignal('SIGTERM', 143));
  return controller.signal;
}

/** Prints an error (one line, or the JSON object) and returns its exit code. */
export function renderError(err: unknown, opts: OutputOptions): number {
  const e = toCalError(err);
  if (opts.json) process.stdout.write(JSON.stringify({ error: e.toJSON() }) + '\n');
  else {
    // not_found carries the reference that matched nothing: no handle line for a handle that is not there.
    if (e.details.handle && e.kind !== 'not_found') process.stderr.write(`handle: ${e.details.handle}\n`);
    process.stderr.write(forTerminal(`cal: ${e.kind}: ${e.message}\n`, process.stderr));
  }
  return e.exitCode;
}

export async function fileText(file: string, flag: string): Promise<string> {
  return readUserFileSync(file, flag);
}
