import { command as inspect, LISTING_ONLY } from './inspect.js';
import { defineCommand } from './spec.js';

/**
 * `cal ls` (or `cal list`): the listing `cal inspect` prints without a handle, as plain text on a
 * terminal too (the TUI is `cal inspect`'s), with inspect's own filters and `--json`. It runs
 * inspect's listing, so the two cannot differ (through a fleet as well).
 */
export const command = defineCommand({
  name: 'ls',
  aliases: ['list'],
  help: 'list the handles, newest activity first: what cal inspect prints without a handle, never the TUI',
  args: [],
  options: inspect.options,
  run(_args, opts, global) {
    return inspect.run([undefined], Object.assign({ [LISTING_ONLY]: true }, opts), global);
  },
});
