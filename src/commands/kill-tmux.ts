import { openSessions } from '../index.js';
import { renderError, openOptions } from './common.js';
import { defineCommand } from './spec.js';

export const command = defineCommand({
  name: 'kill-tmux',
  help: "kill the session's tmux pane (the session itself can still be continued)",
  args: [{ name: 'handle', help: 'handle id or name', required: true }],
  options: {
    json: { help: 'print one JSON object on stdout' },
  },
  async run([ref], opts, global) {
    try {
      const sessions = await openSessions(openOptions(global));
      const handle = await sessions.killTmux(ref);
      if (opts.json) process.stdout.write(JSON.stringify({ handle: handle.id, status: handle.provider.status }) + '\n');
      else process.stderr.write(`handle: ${handle.id}\n`);
      return 0;
    } catch (err) {
      return renderError(err, opts);
    }
  },
});
