import { Readable } from 'node:stream';

/**
 * The terminal's input as Ink should see it: one key (or one paste) per read, a render apart.
 *
 * Ink hands a read's text to every listener as one input. When the view is busy (a refresh, a
 * redraw on a loaded machine), keys typed one after another arrive in one read: Enter that
 * closes the filter and then `d` came as "\rd", which the filter's input took as text, so `d`
 * never reached the list (seen in CI). Here each control key is its own read, and the next one
 * is handed over only after the view has drawn what the last one did, so it reaches whatever is
 * on the screen then (the list, not the closed input).
 *
 * Pastes are the exception that makes splitting safe: the terminal is asked to bracket them
 * (`ESC[?2004h`), and a bracketed paste is one read with its line breaks made spaces, so pasted
 * text is never Enter and never a command. Printable text typed in one read stays one read, as
 * Ink gives it (a run of letters is no command key).
 */

const ESC = '\u001B';
const PASTE_START = `${ESC}[200~`;
const PASTE_END = `${ESC}[201~`;
export const BRACKETED_PASTE_ON = `${ESC}[?2004h`;
export const BRACKETED_PASTE_OFF = `${ESC}[?2004l`;
/** Time for Ink to act on one key and draw before the next from the same read. */
const KEY_GAP_MS = 15;

/** Where a paste split over reads has got to: the text so far, or null outside a paste. */
export interface KeySplitState {
  paste: string | null;
}

/**
 * A read's text as the keys in it: each escape sequence, each control character and each paste
 * its own unit, printable runs as they are. A paste not yet ended stays in `state`.
 */
export function splitKeys(text: string, state: KeySplitState): string[] {
  const units: string[] = [];
  let rest = text;
  while (rest.length > 0) {
    if (state.paste !== null) {
      const end = rest.indexOf(PASTE_END);
      if (end === -1) {
        state.paste += rest;
        break;
      }
      const pasted = (state.paste + rest.slice(0, end)).replace(/\r\n|\r|\n/g, ' ');
      state.paste = null;
      if (pasted) units.push(pasted);
      rest = rest.slice(end + PASTE_END.length);
      continue;
    }
    if (rest.startsWith(PASTE_START)) {
      state.paste = '';
      rest = rest.slice(PASTE_START.length);
      continue;
    }
    const length = rest[0] === ESC ? escapeLength(rest) : isControl(rest.charCodeAt(0)) ? 1 : printableLength(rest);
    units.push(rest.slice(0, length));
    rest = rest.slice(length);
  }
  return units;
}

function isControl(code: number): boolean {
  return code < 0x20 || code === 0x7f;
}

function printableLength(text: string): number {
  let i = 0;
  while (i < text.length && !isControl(text.charCodeAt(i))) i++;
  return i;
}

/** The length of the escape sequence `text` starts with: CSI, SS3, or ESC and one character (Alt). */
function escapeLength(text: string): number {
  if (text.length === 1) return 1;
  const second = text[1]!;
  if (second === '[') {
    // CSI: parameter bytes, intermediate bytes, one final byte.
    let i = 2;
    while (i < text.length && /[0-?]/.test(text[i]!)) i++;
    while (i < text.length && /[ -/]/.test(text[i]!)) i++;
    return Math.min(text.length, i + 1);
  }
  if (second === 'O') return Math.min(text.length, 3);
  // Alt and an arrow (ESC ESC [ A) is one key, as Ink reads it.
  if (second === ESC) return 1 + escapeLength(text.slice(1));
  return 1 + (text.codePointAt(1)! > 0xffff ? 2 : 1);
}

/** What of the terminal's stdin the reader passes on (a tty's, or a test's stand-in). */
export interface KeySource {
  isTTY?: boolean;
  setRawMode(mode: boolean): unknown;
  setEncoding(encoding: BufferEncoding): unknown;
  on(event: 'data', listener: (chunk: string | Buffer) => void): unknown;
  off(event: 'data', listener: (chunk: string | Buffer) => void): unknown;
  resume(): unknown;
  pause(): unknown;
  ref?(): unknown;
  unref?(): unknown;
}

/**
 * A stdin for Ink over the terminal's: raw mode, ref and unref go to the terminal; each read is
 * one unit of `splitKeys`, at least KEY_GAP_MS after the one before it. Reading
 * stops while raw mode is off, so `tmux attach` gets the terminal's input whole.
 */
export class KeyReader extends Readable {
  readonly isTTY: boolean;
  private readonly split: KeySplitState = { paste: null };
  private readonly queue: string[] = [];
  private timer: NodeJS.Timeout | null = null;
  private reading = false;
  private readonly onData = (chunk: string | Buffer) => {
    this.queue.push(...splitKeys(typeof chunk === 'string' ? chunk : chunk.toString('utf8'), this.split));
    if (!this.timer) this.pump();
  };

  constructor(private readonly source: KeySource) {
    super({ objectMode: true, read() {} });
    this.isTTY = source.isTTY === true;
  }

  /** Ink sets utf8; the units are strings already. */
  override setEncoding(): this {
    return this;
  }

  setRawMode(mode: boolean): this {
    this.source.setRawMode(mode);
    if (mode && !this.reading) {
      this.reading = true;
      this.source.setEncoding('utf8');
      this.source.on('data', this.onData);
      this.source.resume();
    } else if (!mode && this.reading) {
      this.reading = false;
      this.source.off('data', this.onData);
      this.source.pause();
    }
    return this;
  }

  ref(): this {
    this.source.ref?.();
    return this;
  }

  unref(): this {
    this.source.unref?.();
    return this;
  }

  override _destroy(err: Error | null, done: (err: Error | null) => void): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.reading) this.setRawMode(false);
    done(err);
  }

  private pump(): void {
    this.timer = null;
    const unit = this.queue.shift();
    if (unit === undefined) return;
    this.push(unit);
    // The next key, from this read or the next one, a render later.
    this.timer = setTimeout(() => this.pump(), KEY_GAP_MS);
  }
}
