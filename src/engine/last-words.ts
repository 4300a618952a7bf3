/** A V8 stack frame as printed: `at fn (file:line:col)`, `at file:line:col`, `at fn (native)`. */
const STACK_FRAME = /^at\s.*(:\d+:\d+\)?|\((native|<anonymous>)\))$/;

/**
 * The last non-empty screen lines of a dead pane, as one line (a diagnostic, not an answer). A
 * CLI that died on an exception ends on its stack (and Node's version line): then the line above
 * the frames, the error itself, comes with the innermost frame, since the last frames alone say
 * nothing of what went wrong (seen: Gemini CLI 0.41.0 ending on three React frames).
 */
export function lastWords(screen: string): string {
  const lines = screen.split('\n').map((l) => l.trim()).filter(Boolean).filter((l) => !/^Pane is dead/.test(l));
  let end = lines.length;
  while (end > 0 && /^Node\.js v\d/.test(lines[end - 1] as string)) end--;
  let frames = end;
  while (frames > 0 && STACK_FRAME.test(lines[frames - 1] as string)) frames--;
  const words = frames < end && frames > 0 ? [lines[frames - 1], lines[frames]] : lines.slice(-3);
  return words.join(' / ').slice(0, 400);
}
