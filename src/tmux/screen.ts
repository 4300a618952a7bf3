/**
 * A pane's screen as tmux draws it (`capture-pane -e`: the text with its SGR styles), read by an
 * adapter for one control decision only: whether the CLI's input box holds a draft a person
 * typed, before cal pastes (docs/drafts.md). Never an answer, never a completion signal. Knows
 * nothing about which CLI draws the screen.
 */
export interface PaneScreen {
  /** The visible rows, top to bottom, each with its SGR escape sequences as tmux wrote them. */
  lines: string[];
  /** Where the terminal cursor is (0-based), and whether the CLI shows it. */
  cursor: { x: number; y: number; visible: boolean };
  /**
   * The pane's id, session, process and whether it is dead, read by the same tmux client as the
   * rows (so a draft check costs one client, not two). Unset where the reader does not know.
   */
  pane?: { id: string; dead: boolean; session: string; pid: number | null };
}

/** One stretch of a row in one style. */
export interface StyledRun {
  text: string;
  dim: boolean;
  inverse: boolean;
  /** The foreground colour as its SGR parameters (`38;5;248`, `90`), or null for the default. */
  fg: string | null;
}

// eslint-disable-next-line no-control-regex
const SGR = /\x1b\[([0-9;:]*)m/g;
// eslint-disable-next-line no-control-regex
const OTHER_ESCAPES = /\x1b\[[0-9;?]*[A-Za-ln-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Za-z0-9]/g;

/** A row cut into runs of one style each (SGR only; other escape sequences are dropped). */
export function styledRuns(line: string): StyledRun[] {
  const runs: StyledRun[] = [];
  let dim = false;
  let inverse = false;
  let fg: string | null = null;
  let last = 0;
  const text = line.replace(OTHER_ESCAPES, '');
  const push = (chunk: string) => {
    if (chunk) runs.push({ text: chunk, dim, inverse, fg });
  };
  for (const m of text.matchAll(SGR)) {
    push(text.slice(last, m.index));
    last = (m.index ?? 0) + m[0].length;
    const params = (m[1] ?? '').split(';');
    for (let i = 0; i < params.length; i++) {
      const p = params[i] === '' ? 0 : Number(params[i]);
      if (p === 0) [dim, inverse, fg] = [false, false, null];
      else if (p === 2) dim = true;
      else if (p === 22) dim = false;
      else if (p === 7) inverse = true;
      else if (p === 27) inverse = false;
      else if (p === 39) fg = null;
      else if ((p >= 30 && p <= 37) || (p >= 90 && p <= 97)) fg = String(p);
      else if (p === 38 || p === 48) {
        // 38;5;N or 38;2;R;G;B (48: the background, skipped whole).
        const width = params[i + 1] === '5' ? 2 : params[i + 1] === '2' ? 4 : 0;
        if (p === 38) fg = params.slice(i, i + 1 + width).join(';');
        i += width;
      }
    }
  }
  push(text.slice(last));
  return runs;
}

/** A row as plain text (no escapes; a no-break space as a space). */
export function plainText(line: string): string {
  return styledRuns(line)
    .map((r) => r.text)
    .join('')
    .replace(/\u00a0/g, ' ');
}

/**
 * What a person typed on a row: the text that is not dim (TUIs draw a placeholder dim), without
 * the block cursor a TUI draws in inverse video in front of a dim placeholder (the placeholder's
 * first letter). `placeholderFg` names a foreground colour a TUI draws its placeholder in instead.
 */
export function typedText(line: string, placeholderFg: readonly string[] = []): string {
  const runs = styledRuns(line);
  const isPlaceholder = (r: StyledRun | undefined) => !!r && (r.dim || (r.fg !== null && placeholderFg.includes(r.fg)));
  let out = '';
  runs.forEach((run, i) => {
    if (isPlaceholder(run)) return;
    if (run.inverse && run.text.trim().length <= 1 && isPlaceholder(runs[i + 1])) return;
    out += run.text;
  });
  return out.replace(/\u00a0/g, ' ');
}

/** A horizontal rule a TUI draws around its input box (a row of one box-drawing character). */
export function isRule(line: string): boolean {
  return /^\s*([─━▀▄═-])\1{19,}\s*$/.test(plainText(line));
}
