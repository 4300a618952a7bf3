import { CalError, type ErrorKind } from '../errors.js';
import type { CertifyResult, TurnResult } from './types.js';

/**
 * A turn that was sent and settled without completing: `turn_failed` (the CLI recorded an API
 * error), `interrupted` or `lost`. The settled records come with it, so a caller can show the
 * CLI's own message or continue again (a lost turn resumes natively).
 */
export class TurnError extends CalError {
  readonly result: TurnResult;

  constructor(result: TurnResult) {
    const { kind, message } = turnEnding(result.turn);
    super(kind, message, { handle: result.handle.id, turn: result.turn.id });
    this.name = 'TurnError';
    this.result = result;
  }
}

function turnEnding(turn: TurnResult['turn']): { kind: ErrorKind; message: string } {
  switch (turn.status) {
    case 'failed':
      return { kind: 'turn_failed', message: `the turn failed: ${turn.error?.message ?? 'no message from the CLI'}` };
    case 'interrupted':
      return { kind: 'interrupted', message: `the turn was interrupted${turn.error ? `: ${turn.error.message}` : ''}` };
    case 'lost':
      return { kind: 'lost', message: `the turn was lost: ${turn.error?.message ?? 'the CLI ended before the turn did'}; continue again to resume` };
    default:
      return { kind: 'internal', message: `turn ended in unexpected status ${turn.status}` };
  }
}

/** `certify` ran, and at least one certification failed: the CLI version does not keep the contract. */
export class CertificationError extends CalError {
  readonly result: CertifyResult;

  constructor(result: CertifyResult) {
    const { report } = result;
    const failed = report.outcomes.filter((o) => o.result === 'fail').map((o) => o.id);
    super('certification_failed', `${report.counts.fail} certification${report.counts.fail === 1 ? '' : 's'} failed for ${report.provider} ${report.cli.version}: ${failed.join(', ')}`);
    this.name = 'CertificationError';
    this.result = result;
  }
}

/** A completed turn is returned; any other ending is thrown as the kind the CLI exits with. */
export function completedOrThrow(result: TurnResult): TurnResult {
  if (result.turn.status === 'completed') return result;
  throw new TurnError(result);
}
