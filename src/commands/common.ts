import fs from 'node:fs/promises';
import { CalError, toCalError } from '../errors.js';
import type { AgentSessionHandle } from '../handles/schema.js';
import type { EventRecord } from '../state/store.js';
import type { TurnRecord } from '../state/turns.js';

/** Options every command shares. */
export interface GlobalOptions {
  stateDir?: string;
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
  if (message.includes('\0')) throw new CalError('usage', `the message contains a NUL byte at offset ${message.indexOf('\0')}`);
  if (!message.trim()) throw new CalError('usage', 'the message is empty');
  return message;
}

export function parseSeconds(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new CalError('usage', `${flag} takes a positive number of seconds, not ${JSON.stringify(value)}`);
  return n;
}

export function eventPrinter(opts: OutputOptions): ((e: EventRecord) => void) | undefined {
  if (!opts.events) return undefined;
  return (e) => process.stderr.write(JSON.stringify(e) + '\n');
}

export function turnJson(turn: TurnRecord): Record<string, unknown> {
  return {
    id: turn.id,
    status: turn.status,
    answer: turn.answer,
    turnKey: turn.turnKey,
    error: turn.error,
    tools: turn.tools,
  };
}

/** Prints a finished turn and returns the exit code its status maps to. */
export function renderTurn(handle: AgentSessionHandle, turn: TurnRecord, opts: OutputOptions): number {
  const failure = turnFailure(handle, turn);
  if (opts.json) {
    const out: Record<string, unknown> = { handle: handle.id, turn: turnJson(turn) };
    if (failure) out.error = failure.toJSON();
    process.stdout.write(JSON.stringify(out) + '\n');
  } else {
    if (turn.answer !== null && turn.status === 'completed') process.stdout.write(turn.answer.endsWith('\n') ? turn.answer : `${turn.answer}\n`);
    process.stderr.write(`handle: ${handle.id}\n`);
    if (failure) process.stderr.write(`cal: ${failure.kind}: ${failure.message}\n`);
  }
  return failure ? failure.exitCode : 0;
}

function turnFailure(handle: AgentSessionHandle, turn: TurnRecord): CalError | null {
  const details = { handle: handle.id, turn: turn.id };
  switch (turn.status) {
    case 'completed':
      return null;
    case 'failed':
      return new CalError('turn_failed', `the turn failed: ${turn.error?.message ?? 'no message from the CLI'}`, details);
    case 'interrupted':
      return new CalError('interrupted', `the turn was interrupted${turn.error ? `: ${turn.error.message}` : ''}`, details);
    case 'lost':
      return new CalError('lost', `the turn was lost: ${turn.error?.message ?? 'the CLI ended before the turn did'}; continue again to resume`, details);
    default:
      return new CalError('internal', `turn ended in unexpected status ${turn.status}`, details);
  }
}

/** Prints an error (one line, or the JSON object) and returns its exit code. */
export function renderError(err: unknown, opts: OutputOptions): number {
  const e = toCalError(err);
  if (opts.json) process.stdout.write(JSON.stringify({ error: e.toJSON() }) + '\n');
  else {
    if (e.details.handle) process.stderr.write(`handle: ${e.details.handle}\n`);
    process.stderr.write(`cal: ${e.kind}: ${e.message}\n`);
  }
  return e.exitCode;
}

export async function fileText(file: string, flag: string): Promise<string> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch {
    throw new CalError('usage', `${flag}: cannot read ${file}`);
  }
}
