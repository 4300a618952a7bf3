import { TEXT, type MessageGuard } from '../message-guard.js';

/**
 * How OpenCode 1.18.33's TUI reads a submitted message (its bundle, and the pane in tmux against
 * the scripted model):
 *
 * - `/` runs a command: `/exit` (aliases `/quit`, `/q`; also behind a blank: ` /exit`) closes
 *   OpenCode, and the pane ends with it.
 * - A message that is, once trimmed, `exit`, `quit` or `:q` closes it too (its submit handler;
 *   measured: `exit` ended the pane, exit 12).
 * - `!` typed first on an empty prompt opens shell mode; a pasted `!touch x` was text (measured
 *   alone and behind a space, a tab, U+00A0), guarded all the same since cal cannot tell how a
 *   later release reads a paste.
 * - `@name` mentions a file or an agent: the user's to use. `#`, `?`, `&`, `-`, `$` were text.
 * A zero-width space (U+200B, which JavaScript's trim keeps) in front kept each of them text
 * (measured: `\u200b/exit`, `\u200b:q`, `\u200b!touch x` reached the model).
 */
export const opencodeMessageGuard: MessageGuard = {
  passesOver: 'blanks',
  leads: {
    '/': { means: 'a leading "/" runs a command ("/exit" closes OpenCode)', readAt: 'visible', action: 'zero-width-space' },
    '!': { means: 'a typed first "!" opens shell mode', readAt: 'visible', action: 'zero-width-space' },
    '@': { means: 'a leading "@name" mentions a file or an agent', readAt: 'visible', action: 'keep' },
    '#': TEXT,
    '?': TEXT,
    '&': TEXT,
    '-': TEXT,
    '$': TEXT,
  },
  commandWords: { words: ['exit', 'quit', ':q'], means: '"exit", "quit" and ":q" close OpenCode', action: 'zero-width-space' },
};
