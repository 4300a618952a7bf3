import { TEXT, type MessageGuard } from '../message-guard.js';

/**
 * How Cline CLI 3.0.65's TUI reads a submitted message (its source, apps/cli's prompt input
 * controller, and its pane in tmux against the scripted model; docs/cline.md):
 *
 * - The prompt is trimmed (JavaScript's trim) before anything reads it, and stored trimmed.
 * - A trimmed prompt starting with `/` runs a slash command when one has that name (`/quit`
 *   exits Cline, `/clear` empties the session); otherwise it is sent as text.
 * - `@` opens the file-mention picker: the user's to use.
 * - A last word that starts with `/` (after a blank, or first) or `@` opens a completion menu, and
 *   Enter takes its first entry instead of submitting: measured, ` /exit` (a zero-width space in
 *   front) ended Cline. A space at the end closes the menu; Cline trims it from the prompt.
 * - `!`, `#`, `?`, `&`, `-`, `$` have no meaning at the start of a prompt.
 * A zero-width space (U+200B, which trim keeps) in front keeps `/` text.
 */
export const clineMessageGuard: MessageGuard = {
  passesOver: 'blanks',
  leads: {
    '/': { means: 'a leading "/" runs a slash command ("/quit" exits Cline, "/clear" empties the session)', readAt: 'visible', action: 'zero-width-space' },
    '!': TEXT,
    '@': { means: 'a leading "@path" mentions a file', readAt: 'visible', action: 'keep' },
    '#': TEXT,
    '?': TEXT,
    '&': TEXT,
    '-': TEXT,
    '$': TEXT,
  },
  endsWithSpace: true,
};
