/**
 * Choosing one option of a TUI's start-up dialog from its screen, for the dialogs cal answered in
 * the CLI's config beforehand and answers again when the CLI lost that answer (a concurrent
 * rewrite of its config: `preAnsweredDialogKeys`). The pane is the control channel here: the
 * screen decides which keys to press, never what a turn answered.
 */

/** A screen row without a dialog box's side borders (Claude Code 2.0.x and Copilot CLI draw `│`). */
const rowText = (line: string) => line.replace(/^\s*│/, '').replace(/│\s*$/, '').trim();

/**
 * The keys that select the row matching `option` in the dialog whose rows include one matching
 * `dialog`, or null when the screen shows no such dialog. The options are rows of their own, the
 * selected one opening with `❯`; the keys move from it to `option`, then Enter.
 */
export function optionKeys(screen: string, dialog: RegExp, option: RegExp): string[] | null {
  const rows = screen.split('\n').map(rowText);
  if (!rows.some((row) => dialog.test(row))) return null;
  const wanted = rows.findIndex((row) => option.test(row.replace(/^❯\s*/, '')));
  if (wanted < 0) return null;
  // The selected option is within the few rows of the option list, not the prompt box elsewhere.
  const near = [-3, -2, -1, 0, 1, 2, 3].map((d) => wanted + d).filter((i) => /^❯\s*(?:\d+\.\s*)?(?:Yes|No)\b/.test(rows[i] ?? ''));
  const selected = near[0];
  if (selected === undefined) return null;
  const moves = wanted - selected;
  return [...Array<string>(Math.abs(moves)).fill(moves > 0 ? 'Down' : 'Up'), 'Enter'];
}
