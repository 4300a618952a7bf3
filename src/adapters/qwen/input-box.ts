import { plainText, type PaneScreen } from '../../tmux/screen.js';
import { lastMarkedRow } from '../input-box.js';

/**
 * Qwen's prompt marker: the box's row opens with `> `, or `* ` in YOLO mode (the bypass policy);
 * earlier prompts are drawn indented.
 */
const MARKER = /^ ?[>*] /;
/** Gemini CLI's box, which Qwen Code keeps: the placeholder drawn in grey 103. */
const markedRow = lastMarkedRow(MARKER, { fg: ['38;5;103'], text: /^Type your message or @path\/to\/file$/ });

/**
 * What Qwen Code's input box holds ('' when empty). Besides its placeholder, Qwen shows a
 * suggested next prompt as ghost text in the empty box (measured on 0.24.4: after a turn, in
 * grey 103, its first character in the cursor's cell, drawn in the default colour): with the
 * cursor still on the first cell after the marker nothing was typed, so that one non-grey
 * character is the ghost's, not a draft. A typed draft moves the cursor past it.
 */
export function readQwenInputBox(screen: PaneScreen): string | null {
  const typed = markedRow(screen);
  if (typed === null || typed.length !== 1) return typed;
  const row = screen.lines[screen.cursor.y];
  const marker = row === undefined ? null : MARKER.exec(plainText(row));
  return marker && screen.cursor.x === marker[0].length ? '' : typed;
}
