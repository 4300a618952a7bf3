import { CalError, openSessions, TurnError } from '../index.js';
import { parseHandleRef } from '../state/store.js';
import { openOptions, parseSeconds, renderError, renderTurn } from './common.js';
import { defineCommand } from './spec.js';

/**
 * `cal wait <handle> [--turn ID] [--json] [--timeout S]`: waits for a turn (a detached one, or one
 * another cal runs) to settle and prints it as the blocking `continue` would have, exiting with the
 * turn's own code: 0 completed, 10 failed, 11 interrupted, 12 lost. The newest turn by default.
 * `cal wait --any <h1> <h2> …` waits for the first of several handles' newest turns and prints
 * that one (its handle line says which). The library's wait and waitForAny do the waiting
 * (library/wait.ts): a turn whose owning cal died is lost (12, cal recover settles it);
 * `--timeout` gives up with `timeout` (14) and leaves the turns running.
 */
export const command = defineCommand({
  name: 'wait',
  help: "wait for a turn to end and print its result as continue does, with the turn's exit code (the newest turn by default); --any: the first of several handles' turns",
  args: [{ name: 'handle', help: 'handle id or name (several with --any)', required: true, variadic: true }],
  options: {
    any: { help: "wait for the first of the handles' newest turns to end, and print that one" },
    turn: { value: '<id>', help: 'the turn to wait for (default: the newest)' },
    timeout: { value: '<seconds>', help: 'give up after this long (timeout, 14); the turn goes on' },
    json: { help: 'print one JSON object on stdout, as continue --json does' },
  },
  async run([refs], opts, global) {
    try {
      for (const ref of refs) parseHandleRef(ref);
      if (refs.length > 1 && !opts.any) throw new CalError('usage', `cal wait takes one handle (${refs.length} given); --any waits for the first of several`);
      if (opts.any && opts.turn !== undefined) throw new CalError('usage', '--turn names the turn of one handle; leave it out with --any');
      const timeoutSeconds = opts.timeout === undefined ? undefined : parseSeconds(opts.timeout, '--timeout');
      const sessions = await openSessions(openOptions(global));
      // Ctrl-C ends the wait alone: the turns are not this cal's to cancel (cal cancel is).
      const options = timeoutSeconds === undefined ? {} : { timeoutSeconds };
      try {
        const result = opts.any ? await sessions.waitForAny(refs, options) : await sessions.wait(refs[0]!, { ...options, ...(opts.turn === undefined ? {} : { turn: opts.turn }) });
        return renderTurn(result, opts);
      } catch (err) {
        if (err instanceof TurnError) return renderTurn(err.result, opts, err);
        throw err;
      }
    } catch (err) {
      return renderError(err, opts);
    }
  },
});
