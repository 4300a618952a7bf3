import { CalError, openSessions, TurnError } from '../index.js';
import { parseHandleRef } from '../state/store.js';
import { renderError, renderTurn, openOptions } from './common.js';
import { defineCommand } from './spec.js';

/**
 * `cal show <handle> [--turn ID]`: a past turn's full answer, from cal's own turn records (so a
 * `--stream` run that printed pieces, or a script that lost its output, can read it again). The
 * newest turn by default. It prints as `continue` printed it and exits with the turn's own code:
 * 0 completed, 10 failed, 11 interrupted, 12 lost; a turn still in flight prints its status and
 * exits 0. A turn id the handle does not have is `not_found` (3).
 */
export const command = defineCommand({
  name: 'show',
  help: "print a past turn's full answer from cal's turn records (the newest turn by default)",
  args: [{ name: 'handle', help: 'handle id or name', required: true }],
  options: {
    turn: { value: '<id>', help: 'the turn to show (default: the newest)' },
    json: { help: 'print one JSON object on stdout, as continue --json does' },
  },
  async run([ref], opts, global) {
    try {
      parseHandleRef(ref);
      const sessions = await openSessions(openOptions(global));
      const detail = await sessions.inspect(ref, { screen: false });
      const turn = opts.turn === undefined ? detail.turns.at(-1) : detail.turns.find((t) => t.id === opts.turn);
      if (!turn) {
        throw new CalError('not_found', opts.turn === undefined ? `handle ${detail.handle.id} has no turn yet` : `handle ${detail.handle.id} has no turn ${opts.turn}`);
      }
      const result = { handle: detail.handle, turn };
      const settledBadly = turn.status === 'failed' || turn.status === 'interrupted' || turn.status === 'lost';
      if (!opts.json && turn.status !== 'completed' && !settledBadly) process.stderr.write(`cal: note: turn ${turn.id} is ${turn.status}\n`);
      return renderTurn(result, opts, settledBadly ? new TurnError(result) : null);
    } catch (err) {
      return renderError(err, opts);
    }
  },
});
