import type { MessageGuard } from '../message-guard.js';
import { opencodeMessageGuard } from '../opencode/message-guard.js';

/**
 * How Kilo Code CLI 7.7.7's TUI reads a submitted message: OpenCode's TUI, measured the same
 * (pasted into its pane in tmux against the scripted model, and in its bundle), so its
 * first-character table is OpenCode's (src/adapters/opencode/message-guard.ts):
 *
 * - `/` runs a command (its bundle: `/exit`, `/quit` and `:q` close it; `/memory …` and Kilo's
 *   other commands act); guarded as OpenCode's.
 * - A message that is, once trimmed, `exit`, `quit` or `:q` closes it (its submit handler, the
 *   same three words; measured: a pasted `exit` ended the pane).
 * - A pasted `!touch x` reached the model as text (measured), guarded all the same, as OpenCode's.
 * - `#x`, `?x`, `&x`, `-x`, `$x` and `@name` (no such file) reached the model as text (measured).
 */
export const kiloMessageGuard: MessageGuard = {
  passesOver: opencodeMessageGuard.passesOver,
  leads: opencodeMessageGuard.leads,
  commandWords: { words: ['exit', 'quit', ':q'], means: '"exit", "quit" and ":q" close Kilo Code CLI', action: 'zero-width-space' },
};
