import { openSessions, type CancelResult } from '../index.js';
import { parseHandleRef } from '../state/store.js';
import { openOptions, parseSeconds, renderError } from './common.js';
import { defineCommand } from './spec.js';

/**
 * `cal cancel <handle>`: cancels the turn in flight on a handle from any process. The cal running
 * it interrupts its CLI as its own Ctrl-C would and exits 11 (`interrupted`); this one waits until
 * the turn is settled and exits 0. Nothing in flight: says so, exit 0. A turn whose cal is gone
 * is settled as `cal recover` would (exit 0; the output says how it ended). 14 (timeout): the cal
 * running the turn did not settle it in time.
 */
export const command = defineCommand({
  name: 'cancel',
  help: 'cancel the turn in flight on a handle, from any process (its cal exits 11, interrupted)',
  args: [{ name: 'handle', help: 'handle id or name', required: true }],
  options: {
    timeout: { value: '<seconds>', help: 'for a turn whose cal is gone: how long recover may follow it (default 600)' },
    json: { help: 'print one JSON object on stdout' },
  },
  async run([ref], opts, global) {
    try {
      parseHandleRef(ref);
      const timeoutSeconds = opts.timeout === undefined ? undefined : parseSeconds(String(opts.timeout), '--timeout');
      const sessions = await openSessions(openOptions(global));
      const { handle, action, turn, recovered } = await sessions.cancel(ref, timeoutSeconds === undefined ? {} : { timeoutSeconds });
      // Whatever the turn's ending, the cancel did what was asked: the ending is in the output.
      const code = 0;
      if (opts.json) {
        process.stdout.write(JSON.stringify({ handle: handle.id, action, turn: turn ? { id: turn.id, status: turn.status, answer: turn.answer } : null, recovered }) + '\n');
        return code;
      }
      process.stderr.write(`handle: ${handle.id}\n`);
      process.stderr.write(`cal: ${cancelText({ handle, action, turn })}\n`);
      return code;
    } catch (err) {
      return renderError(err, opts);
    }
  },
});

/** What a cancel did, in one line (`cal cancel` prints it; so does the inspect view's `c`). */
export function cancelText({ handle, action, turn }: Pick<CancelResult, 'handle' | 'action' | 'turn'>): string {
  const said: Record<typeof action, string> = {
    idle: `nothing to cancel: no turn is in flight on ${handle.id}`,
    cancelled: `cancelled turn ${turn?.id}: interrupted`,
    already_ended: `turn ${turn?.id} had already ended (${turn?.status}) before the cancel took effect`,
    recovered: `the cal running turn ${turn?.id} was gone; settled as cal recover would: ${turn?.status}`,
  };
  return said[action];
}
