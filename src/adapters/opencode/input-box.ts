import { plainText, typedText, type PaneScreen } from '../../tmux/screen.js';

/**
 * OpenCode's input box (measured on 1.18.33, docs/drafts.md): rows opening with `  ┃` on a
 * background of its own, closed by a row `  ╹▀▀▀…`. Inside: a blank row, the typed text (one row
 * a line), a blank row, and the agent and model row (`Build · model …`). The prompts of the
 * history above are drawn with the same `┃` on another background (233, the box's is 234), so
 * the box is the run of `┃` rows on the box's background right above its closing row. A
 * placeholder (the home screen's suggestion) is drawn in grey 8.
 */
const SIDE = /^ {2}┃/;
const BOTTOM = /^ {2}╹▀/;

/**
 * The reader of a box drawn on background `boxBackground` (a 256-colour index), its placeholder
 * in `placeholderFg`: OpenCode 1.18.33's box is 234 (its history's prompts 233), its placeholder
 * grey 8; Kilo Code CLI 7.7.7 draws the same box one step lighter, 235 (its history's 234;
 * fixtures/screens/kilo-7.7.7-input-box.json), and its placeholder (`Ask anything... "Fix broken
 * tests"`) in grey 247, typed text in 15.
 */
export function inputBoxReader(boxBackground: number, placeholderFg: readonly string[] = ['38;5;8']): (screen: PaneScreen) => string | null {
  // eslint-disable-next-line no-control-regex
  const onBox = new RegExp(`\\x1b\\[(?:[0-9;]*;)?48;5;${boxBackground}[;m]`);
  return (screen) => {
    let bottom = screen.lines.length - 1;
    while (bottom >= 0 && !BOTTOM.test(plainText(screen.lines[bottom] as string))) bottom--;
    if (bottom < 0) return null;
    let top = bottom;
    while (top > 0 && SIDE.test(plainText(screen.lines[top - 1] as string)) && onBox.test(screen.lines[top - 1] as string)) top--;
    // A blank row, at least one text row, a blank row and the agent row.
    if (bottom - top < 4) return null;
    const row = screen.lines[top + 1] as string;
    return typedText(row, placeholderFg).replace(SIDE, '').trim();
  };
}

export const readOpencodeInputBox = inputBoxReader(234);
