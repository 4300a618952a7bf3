import { CalError } from '../../src/errors.js';

/** The CalError kind a call fails with, 'resolved' when it does not, or the text of an untyped error. */
export async function kindOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'resolved';
  } catch (err) {
    return err instanceof CalError ? err.kind : `untyped: ${(err as Error).message}`;
  }
}
