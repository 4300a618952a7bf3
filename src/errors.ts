/**
 * One typed error family for everything cal reports to a user or a script.
 * Each kind has its own exit code (design §7, §9); the table is the documented contract.
 */
export const exitCodes = {
  internal: 1,
  usage: 2,
  not_found: 3,
  invalid_handle: 4,
  busy: 5,
  stale_handle: 6,
  non_continuable: 7,
  non_applicable: 8,
  resume_unavailable: 9,
  turn_failed: 10,
  interrupted: 11,
  lost: 12,
  cli_missing: 13,
  timeout: 14,
  /** `cal certify`: at least one certification failed (the CLI version does not keep the contract). */
  certification_failed: 15,
  /** The CLI release is below the adapter's proven floor, lacks a needed flag, or writes a transcript cal cannot read. */
  cli_unsupported: 16,
  /** Through a fleet: the host that owns the session (or every worker, or Redis itself) stayed unreachable past the caller's bound. */
  host_unavailable: 17,
  /**
   * The message was sent and the CLI wrote to its session after it, but no record there can be
   * matched to it: it may have been taken. Not "not taken" (turn_failed): do not resend blindly.
   */
  unconfirmed: 19,
  /**
   * The session's policy is never to trust a folder on the user's behalf (`--no-trust`, or the
   * state dir's config.json), and the CLI would ask to trust this one: nothing was sent.
   */
  untrusted_folder: 20,
} as const;

export type ErrorKind = keyof typeof exitCodes;

export interface CalErrorDetails {
  field?: string;
  expected?: unknown;
  actual?: unknown;
  handle?: string;
  turn?: string;
  cause?: unknown;
}

export class CalError extends Error {
  readonly kind: ErrorKind;
  readonly details: CalErrorDetails;

  constructor(kind: ErrorKind, message: string, details: CalErrorDetails = {}) {
    // A one-line message: newlines from a CLI's own text would break line-oriented scripts.
    super(message.replace(/\s*\n\s*/g, ' ').trim());
    this.name = 'CalError';
    this.kind = kind;
    this.details = details;
  }

  get exitCode(): number {
    return exitCodes[this.kind];
  }

  /** stale_handle: the field that differs, and its recorded (expected) and requested (actual) values. */
  get field(): string | undefined {
    return this.details.field;
  }

  get expected(): unknown {
    return this.details.expected;
  }

  get actual(): unknown {
    return this.details.actual;
  }

  /** The handle id the failure concerns, when there is one. */
  get handle(): string | undefined {
    return this.details.handle;
  }

  /** The turn id the failure concerns, when a turn was recorded. */
  get turn(): string | undefined {
    return this.details.turn;
  }

  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = { kind: this.kind, message: this.message };
    for (const key of ['field', 'expected', 'actual', 'handle', 'turn'] as const) {
      if (this.details[key] !== undefined) out[key] = this.details[key];
    }
    return out;
  }
}

export function isCalError(err: unknown): err is CalError {
  return err instanceof CalError;
}

/** Why the file system refused a write that the state directory's owner can fix. */
const writeRefusals: Record<string, string> = {
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EROFS: 'the file system is read-only',
  EACCES: 'permission denied (a read-only folder?)',
  EPERM: 'operation not permitted',
};

/**
 * A write the file system refused (disk full, read-only, permission denied) is a problem of the
 * environment, reported as usage naming the file, with the way to settle what it left open.
 * `more` adds reasons a caller knows apply (a folder gone while cal wrote into it).
 */
export function writeRefusal(err: unknown, file?: string, more: Record<string, string> = {}): CalError | null {
  const e = err as NodeJS.ErrnoException | null;
  const reason = { ...writeRefusals, ...more }[e?.code ?? ''];
  const where = file ?? e?.path;
  if (!reason || !where) return null;
  return new CalError('usage', `cannot write ${where}: ${reason}; fix that, then run cal recover to settle unfinished turns`);
}

/**
 * Anything that is not a CalError is a bug, reported as `internal` with its message; except a
 * write the file system refused (a state directory made read-only mid-turn), which writeRefusal
 * names, wherever in cal it surfaced.
 */
export function toCalError(err: unknown): CalError {
  if (isCalError(err)) return err;
  const refused = writeRefusal(err);
  if (refused) return refused;
  const message = err instanceof Error ? err.message : String(err);
  return new CalError('internal', `internal error (a bug, please report it): ${message}`, { cause: err });
}
