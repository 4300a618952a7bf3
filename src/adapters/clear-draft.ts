/**
 * Keys that empty a one-line draft in the input box of the TUIs measured in docs/drafts.md:
 * End puts the cursor after the draft, and each Ctrl-U deletes back towards the line's start.
 * Claude Code's Ctrl-U deletes only the wrapped row the cursor is on, so a draft wider than the
 * pane needs one per row: sixteen cover a draft of sixteen rows, and on an empty input Ctrl-U
 * does nothing. Never Enter, Escape (it interrupts a running turn and does not clear a draft) or
 * Ctrl-C (on an empty input, twice quits).
 */
export const CLEAR_LINE_KEYS: readonly string[] = ['End', ...Array.from({ length: 16 }, () => 'C-u')];
