import { CalError, openSessions } from '../index.js';
import { renderError } from './common.js';
import { defineCommand } from './spec.js';

/**
 * `cal reap [--idle S] [--max-live N] [--dry-run] [--json]`: ends idle panes by the state
 * directory's policy (docs/reaping.md), or by the limits given. A reaped session resumes natively
 * on its next continue. Prints each live pane of a handle and what was done with it; exit 0.
 */
export const command = defineCommand({
  name: 'reap',
  help: 'end idle tmux panes (the sessions resume natively on their next continue), by the policy or the limits given',
  args: [],
  options: {
    idle: { value: '<seconds>', help: 'end panes idle at least this long (default: the policy, 900)' },
    maxLive: { value: '<n>', help: 'keep at most this many live panes, least recently used ended first (default: the policy, 6)' },
    dryRun: { help: 'say what would be ended, end nothing' },
    json: { help: 'print one JSON object on stdout' },
  },
  async run(_args, opts, global) {
    try {
      const idleSeconds = opts.idle === undefined ? undefined : count(opts.idle, '--idle', 0);
      const maxLive = opts.maxLive === undefined ? undefined : count(opts.maxLive, '--max-live', 1);
      const sessions = await openSessions({ stateDir: global.stateDir });
      const panes = await sessions.reap({ idleSeconds, maxLive, dryRun: opts.dryRun === true });
      const ended = panes.filter((p) => p.action !== 'kept').length;
      if (opts.json) {
        process.stdout.write(JSON.stringify({ dryRun: opts.dryRun === true, ended, panes }) + '\n');
        return 0;
      }
      for (const p of panes) {
        const who = p.name ? `${p.handle} (${p.name})` : p.handle;
        process.stdout.write(`${p.action.replace('_', ' ')}\t${who}\t${p.pane}\tidle ${p.idleSeconds}s\t${p.reason}\n`);
      }
      process.stderr.write(`${opts.dryRun ? 'would end' : 'ended'} ${ended} of ${panes.length} live pane${panes.length === 1 ? '' : 's'}\n`);
      return 0;
    } catch (err) {
      return renderError(err, opts);
    }
  },
});

/** A whole number at least `min`, for --idle (0: every pane not protected) and --max-live (at least 1). */
function count(value: string, flag: string, min: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new CalError('usage', `${flag} takes a whole number of at least ${min}, not ${JSON.stringify(value)}`);
  return n;
}
