import { CalError, openSessions } from '../index.js';
import { parseHandleRef } from '../state/store.js';
import { shellQuote } from './inspect.js';
import { openOptions, renderError } from './common.js';
import { defineCommand } from './spec.js';

/**
 * `cal attach <handle>`: this terminal on the session's current pane, until the user detaches.
 * Not on a terminal: a usage error that prints the command to run from one. A pane that is gone:
 * says so and suggests `cal continue`; a structured or API session: non_applicable.
 */
export const command = defineCommand({
  name: 'attach',
  help: "attach this terminal to the session's live pane (detach with C-b d)",
  args: [{ name: 'handle', help: 'handle id or name', required: true }],
  options: {},
  async run([ref], _opts, global) {
    try {
      parseHandleRef(ref);
      const sessions = await openSessions(openOptions(global));
      if (!process.stdin.isTTY || !process.stdout.isTTY) {
        const { attach, handle } = await sessions.inspect(ref, { screen: false });
        // The same checks as the attach itself, so the refusal says the real reason first.
        if (attach === null) await sessions.attach(handle.id);
        throw new CalError('usage', `cal attach needs a terminal (stdin and stdout); from one, run: ${(attach ?? []).map(shellQuote).join(' ')}`, { handle: handle.id });
      }
      return await sessions.attach(ref);
    } catch (err) {
      return renderError(err, {});
    }
  },
});
