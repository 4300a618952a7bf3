import { CalError, openSessions, TurnError, type Turn } from '../index.js';
import { parseHandleRef } from '../state/store.js';
import { isProcessAlive } from '../util/process-identity.js';
import { parseSeconds, renderError, renderTurn } from './common.js';
import { defineCommand } from './spec.js';

const SETTLED = new Set(['completed', 'failed', 'interrupted', 'lost']);
const POLL_MS = 200;

/**
 * `cal wait <handle> [--turn ID] [--json] [--timeout S]`: waits for a turn (a detached one, or one
 * another cal runs) to settle and prints it as the blocking `continue` would have, exiting with the
 * turn's own code: 0 completed, 10 failed, 11 interrupted, 12 lost. The newest turn by default.
 * A turn whose owning cal died before it settled is left to `cal recover` (lost, 12, saying so);
 * `--timeout` gives up with `timeout` (14) and leaves the turn running.
 */
export const command = defineCommand({
  name: 'wait',
  help: "wait for a turn to end and print its result as continue does, with the turn's exit code (the newest turn by default)",
  args: [{ name: 'handle', help: 'handle id or name', required: true }],
  options: {
    turn: { value: '<id>', help: 'the turn to wait for (default: the newest)' },
    timeout: { value: '<seconds>', help: 'give up after this long (timeout, 14); the turn goes on' },
    json: { help: 'print one JSON object on stdout, as continue --json does' },
  },
  async run([ref], opts, global) {
    try {
      parseHandleRef(ref);
      const timeoutMs = opts.timeout === undefined ? Infinity : parseSeconds(opts.timeout, '--timeout') * 1000;
      const sessions = await openSessions({ stateDir: global.stateDir });
      const deadline = Date.now() + timeoutMs;
      // The owner is judged dead only on a second look: it may have settled the turn and exited
      // between this read of the record and the look at its process.
      let ownerGone = false;
      for (;;) {
        const detail = await sessions.inspect(ref, { screen: false });
        const turn: Turn | undefined = opts.turn === undefined ? detail.turns.at(-1) : detail.turns.find((t) => t.id === opts.turn);
        if (!turn) throw new CalError('not_found', opts.turn === undefined ? `handle ${detail.handle.id} has no turn yet` : `handle ${detail.handle.id} has no turn ${opts.turn}`);
        if (SETTLED.has(turn.status)) {
          const result = { handle: detail.handle, turn };
          return renderTurn(result, opts, turn.status === 'completed' ? null : new TurnError(result));
        }
        const gone = turn.ownerPid !== null && !isProcessAlive(turn.ownerPid, turn.ownerStartTime);
        if (gone && ownerGone) {
          throw new CalError('lost', `the cal that ran turn ${turn.id} ended before the turn settled (${turn.status}): cal recover settles it from the CLI's records, then cal wait prints it`, { handle: detail.handle.id, turn: turn.id });
        }
        ownerGone = gone;
        if (gone) continue;
        if (Date.now() >= deadline) throw new CalError('timeout', `turn ${turn.id} is still ${turn.status} after ${opts.timeout}s; it goes on (cal wait again, or cal inspect)`, { handle: detail.handle.id, turn: turn.id });
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
    } catch (err) {
      return renderError(err, opts);
    }
  },
});
