import { openSessions } from '../index.js';
import { parseHandleRef } from '../state/store.js';
import { renderError, openOptions } from './common.js';
import { defineCommand } from './spec.js';

/**
 * `cal remove <handle>`: ends the handle's panes and deletes cal's records of it, so its name can
 * be used again. The CLI's own transcript is left alone. A session's git worktree (start
 * --worktree) goes with its branch when clean and merged; otherwise it is kept and said where.
 * Exit 0 removed, 3 no such handle, 5 a turn is in flight (`--force` removes it anyway), 4 an
 * unreadable handle file.
 */
export const command = defineCommand({
  name: 'remove',
  help: "remove a handle: end its tmux panes and delete cal's records of it (the CLI's transcript stays)",
  args: [{ name: 'handle', help: 'handle id or name', required: true }],
  options: {
    force: { help: 'remove it even while a turn is in flight (the CLI is stopped with its pane)' },
    json: { help: 'print one JSON object on stdout' },
  },
  async run([ref], opts, global) {
    try {
      parseHandleRef(ref);
      const sessions = await openSessions(openOptions(global));
      const { handle, panesEnded, worktree } = await sessions.remove(ref, { force: opts.force === true });
      if (opts.json) process.stdout.write(JSON.stringify({ removed: handle.id, name: handle.name, panesEnded, ...(worktree ? { worktree } : {}) }) + '\n');
      else {
        process.stderr.write(`removed: ${handle.id}${handle.name ? ` (${handle.name})` : ''}\n`);
        if (worktree?.removed) process.stderr.write(`removed worktree ${worktree.path} and its branch ${worktree.branch}\n`);
        else if (worktree) process.stderr.write(`kept worktree ${worktree.path} (branch ${worktree.branch}): ${worktree.kept}\n`);
      }
      return 0;
    } catch (err) {
      return renderError(err, opts);
    }
  },
});
