import { isRule, plainText, typedText, type PaneScreen } from '../tmux/screen.js';

/**
 * Where each TUI draws its input box, to tell whether a person left a draft in it (docs/drafts.md,
 * measured on every release of the version matrix). Each reader returns what the box's first row
 * holds ('' when it is empty, its placeholder aside): a draft of any length starts on that row.
 * Null when the screen shows no input box of the shape the reader knows (a dialog is open, or a
 * release draws it otherwise): then cal cannot tell, and says so rather than paste.
 */
export type InputBoxReader = (screen: PaneScreen) => string | null;

/**
 * The box is the rows between the last two horizontal rules (Claude Code, Pi), its first row
 * opening with `marker` where the TUI draws one.
 */
export function betweenRules(marker: RegExp | null): InputBoxReader {
  return (screen) => {
    const rules = screen.lines.flatMap((line, i) => (isRule(line) ? [i] : []));
    const [top, bottom] = rules.slice(-2);
    if (top === undefined || bottom === undefined || bottom - top < 2) return null;
    const first = screen.lines[top + 1] as string;
    return afterMarker(first, marker, []);
  };
}

/**
 * The box is the last row opening with `marker` (Codex, Gemini CLI draw earlier prompts above it
 * with the same marker); `placeholderFg`: a colour the TUI draws its placeholder in, not dim.
 */
export function lastMarkedRow(marker: RegExp, placeholder: { fg?: readonly string[]; text?: RegExp } = {}): InputBoxReader {
  return (screen) => {
    const row = [...screen.lines].reverse().find((line) => marker.test(plainText(line)));
    if (row === undefined) return null;
    const typed = afterMarker(row, marker, placeholder.fg ?? []);
    return typed !== null && placeholder.text?.test(typed) ? '' : typed;
  };
}

/** The typed text of a row after its marker; null when the row does not open with the marker. */
function afterMarker(row: string, marker: RegExp | null, placeholderFg: readonly string[]): string | null {
  const plain = plainText(row);
  const typed = typedText(row, placeholderFg);
  if (!marker) return typed.trim();
  const opened = marker.exec(plain);
  if (!opened || opened.index !== 0) return null;
  // The marker is never drawn dim, so it opens the typed text as it opens the row.
  const rest = marker.exec(typed);
  return rest && rest.index === 0 ? typed.slice(rest[0].length).trim() : typed.trim();
}
