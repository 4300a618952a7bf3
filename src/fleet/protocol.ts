import { CalError, exitCodes, type ErrorKind } from '../errors.js';
import { ProviderName, ToolPolicy, transports } from '../handles/schema.js';
import { z } from '../util/zod.js';

/**
 * What travels through Redis between fleet clients and workers (docs/fleet.md): a job names one
 * of cal's own library operations with its arguments, checked here on both sides. Nothing in it
 * is run as a command; no environment value or key is ever part of it.
 */

/** Host names go into queue names and Redis keys: a short, plain word. */
export const HostName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'a host name is 1-64 letters, digits, dots, dashes or underscores');

export const newSessionQueue = 'cal-new';
export const hostQueue = (host: string): string => `cal-host-${host}`;
export const keys = {
  alive: (host: string) => `cal:fleet:alive:${host}`,
  hosts: 'cal:fleet:hosts',
  handles: 'cal:fleet:handles',
  names: 'cal:fleet:names',
  /** Pub/sub channel: the id of a job its caller aborted (Ctrl-C, an AbortSignal, a follow ended). */
  abort: 'cal:fleet:abort',
  /** Set when a caller aborts a job, so a worker that takes it later does not begin it. */
  aborted: (jobId: string) => `cal:fleet:aborted:${jobId}`,
  /** Renewed by the caller of a follow while it reads: a follow whose caller is gone ends. */
  lease: (jobId: string) => `cal:fleet:lease:${jobId}`,
  /**
   * A start's claim, set (SET NX) by the worker that takes it before anything is sent: the host,
   * then the handle and turn once sent, then its result. A start job run again (its worker died,
   * or it was replayed) on any worker finds it and is never sent a second time.
   */
  claim: (jobId: string) => `cal:fleet:claim:${jobId}`,
  /** A host's handle listing as it last answered: what `inspect` shows of a host that is down. */
  listing: (host: string) => `cal:fleet:listing:${host}`,
} as const;

/** How long a start's claim outlives its job (s): a replay of the job within it is recognised. */
export const claimTtlSeconds = 24 * 3600;

/** How long an abort mark and a follow's lease last unless renewed (ms); the lease is renewed every second. */
export const abortMarkMs = 300_000;
export const leaseMs = 5000;

/** Heartbeat: renewed every second, gone 3 s after a worker stopped renewing it. */
export const heartbeatMs = 1000;
export const heartbeatTtlMs = 3000;

const text = z.string();
const seconds = z.number().finite().positive();
const Transport = z.enum(transports);
const expected = { cwd: text.optional(), model: text.optional(), systemPrompt: text.optional(), toolPolicy: ToolPolicy.optional() };

export const StartArgs = z
  .object({ provider: ProviderName, message: text, transport: Transport.optional(), name: text.optional(), replace: z.boolean().optional(), timeoutSeconds: seconds.optional(), ...expected })
  .strict();
export const ContinueArgs = z
  .object({ transport: Transport.optional(), wait: z.union([z.boolean(), seconds]).optional(), timeoutSeconds: seconds.optional(), ...expected })
  .strict();

export const Operation = z.discriminatedUnion('op', [
  z.object({ op: z.literal('start'), options: StartArgs }).strict(),
  z.object({ op: z.literal('continue'), ref: text, message: text, options: ContinueArgs }).strict(),
  z.object({ op: z.literal('killTmux'), ref: text }).strict(),
  z.object({ op: z.literal('cancel'), ref: text, timeoutSeconds: seconds.optional() }).strict(),
  z.object({ op: z.literal('remove'), ref: text, force: z.boolean() }).strict(),
  z.object({ op: z.literal('inspect') }).strict(),
  z.object({ op: z.literal('inspectOne'), ref: text, screen: z.boolean() }).strict(),
  z.object({ op: z.literal('events'), ref: text, follow: z.boolean().optional() }).strict(),
  z.object({ op: z.literal('recover'), dryRun: z.boolean(), retryLost: z.boolean(), timeoutSeconds: seconds.optional() }).strict(),
]);
export type Operation = z.infer<typeof Operation>;

/** A job: the operation, and when a job still waiting is no longer wanted (epoch ms; null: never). */
export const JobData = z.object({ operation: Operation, notAfter: z.number().nullable() }).strict();
export type JobData = z.infer<typeof JobData>;

const ErrorKindSchema = z.string().refine((k): k is ErrorKind => Object.hasOwn(exitCodes, k), 'an error kind');
export const WireError = z.object({
  kind: ErrorKindSchema,
  message: z.string(),
  field: z.string().optional(),
  expected: z.unknown().optional(),
  actual: z.unknown().optional(),
  handle: z.string().optional(),
  turn: z.string().optional(),
});

export type WireError = z.infer<typeof WireError>;

/** A job's return value: the operation's value, or the CalError it threw (with a settled turn's records). */
export const JobResult = z.union([
  z.object({ ok: z.literal(true), host: z.string(), value: z.unknown() }),
  z.object({ ok: z.literal(false), host: z.string(), error: WireError, result: z.unknown().optional() }),
]);
export type JobResult = z.infer<typeof JobResult>;

/** Live output of a running job (BullMQ job progress): one lifecycle event, the turn's progress so far, or its message sent. */
export const JobProgress = z.union([
  z.object({ event: z.record(z.unknown()) }),
  z.object({ progress: z.record(z.unknown()) }),
  // The turn's message left for the CLI (the library's onSent): a detached cal returns on it.
  z.object({ sent: z.object({ handle: z.string(), turn: z.string() }).strict() }),
]);
export type JobProgress = z.infer<typeof JobProgress>;

/** The CalError a wire error stands for. */
export function errorOf(wire: z.infer<typeof WireError>): CalError {
  const { kind, message, ...details } = wire;
  return new CalError(kind as ErrorKind, message, details);
}

/**
 * A Redis URL with every secret replaced, for messages (a password never reaches a log or an
 * error): the password, a user given alone (some clients read `redis://PASSWORD@host` as the
 * password), and every query parameter's value (ioredis reads `?password=` as the password).
 */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    else if (u.username) u.username = '***';
    for (const name of [...new Set(u.searchParams.keys())]) u.searchParams.set(name, '***');
    return u.toString().replace(/%2A%2A%2A/g, '***');
  } catch {
    return '(an unreadable Redis URL)';
  }
}
