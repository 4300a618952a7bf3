import { openSessions } from '../index.js';
import { stdoutClosed } from '../util/closed-pipe.js';
import { renderError, openOptions } from './common.js';
import { defineCommand } from './spec.js';

export const command = defineCommand({
  name: 'events',
  help: "print a handle's lifecycle events as NDJSON",
  args: [{ name: 'handle', help: 'handle id or name', required: true }],
  options: {
    follow: { help: 'keep printing new events (until the handle is removed)' },
  },
  async run([ref], opts, global) {
    try {
      const sessions = await openSessions(openOptions(global));
      for await (const event of sessions.events(ref, { follow: opts.follow === true, signal: stdoutClosed })) process.stdout.write(JSON.stringify(event) + '\n');
      return 0;
    } catch (err) {
      return renderError(err, {});
    }
  },
});
