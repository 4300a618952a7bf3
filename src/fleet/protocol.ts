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
} as const;

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
  z.object({ op: z.literal('events'), ref: text }).strict(),
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

/** Live output of a running job (BullMQ job progress): one lifecycle event or the turn's progress so far. */
export const JobProgress = z.union([z.object({ event: z.record(z.unknown()) }), z.object({ progress: z.record(z.unknown()) })]);
export type JobProgress = z.infer<typeof JobProgress>;

/** The CalError a wire error stands for. */
export function errorOf(wire: z.infer<typeof WireError>): CalError {
  const { kind, message, ...details } = wire;
  return new CalError(kind as ErrorKind, message, details);
}

/** A Redis URL with its password replaced, for messages (a password never reaches a log or an error). */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(an unreadable Redis URL)';
  }
}
