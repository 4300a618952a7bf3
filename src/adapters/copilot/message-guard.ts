import { TEXT, type MessageGuard } from '../message-guard.js';

/**
 * How GitHub Copilot CLI 1.0.102's input box reads a submitted message (its bundle, cli-main.js,
 * and the pane in tmux against the scripted model):
 *
 * - `!cmd` runs `cmd` in a shell, no model and no approval, after `trimStart()`: measured behind a
 *   space, a tab, U+00A0 and U+3000 alike (the file was created each time). A zero-width space
 *   (U+200B, which JavaScript's trim keeps) in front made it text: it reached the model.
 * - `/` runs a slash command (`/exit` ends the session); `\u200b/exit` reached the model as text.
 * - `&task` (after `trim()`) becomes `/delegate task`, handing the task to a cloud agent.
 * - A message that is, once trimmed and lower-cased, `exit`, `quit` or `exit print` ends the
 *   session, `help` opens the help and `$` alone drops the pane into an interactive shell (measured:
 *   the next messages were typed into that shell). `\u200bexit` reached the model as text.
 * - `@path` attaches that file (measured: the model got the text and a `<tagged_files>` list).
 * - `#`, `?` (but `?` alone, which the bundle lists with the words above), `-` are text.
 */
export const copilotMessageGuard: MessageGuard = {
  passesOver: 'blanks',
  leads: {
    '/': { means: 'a leading "/" runs a slash command ("/exit" ends the session)', readAt: 'visible', action: 'zero-width-space' },
    '!': { means: 'a leading "!" runs a shell command, also behind blanks', readAt: 'visible', action: 'zero-width-space' },
    '&': { means: 'a leading "&" delegates the task to a cloud agent (/delegate)', readAt: 'visible', action: 'zero-width-space' },
    '@': { means: 'a leading "@path" attaches that file', readAt: 'visible', action: 'keep' },
    '#': TEXT,
    '?': TEXT,
    '-': TEXT,
    '$': TEXT,
  },
  commandWords: {
    words: ['exit', 'quit', 'exit print', 'help', '?', '$'],
    means: '"exit" and "quit" end the session, "help" opens the help, "$" opens a shell',
    action: 'zero-width-space',
  },
};
