import { CalError } from '../errors.js';

/**
 * The text cal lets into a terminal pane (docs/security.md, "Messages into panes").
 *
 * Messages come from scripts and CI, so they are untrusted bytes. tmux's bracketed paste passes
 * an embedded end-of-paste marker through unchanged, and whatever follows it is typed as keys;
 * a launch argv is echoed by the CLI's TUI to the terminal. So before a message goes into a pane:
 *
 * - CR and CRLF become LF; tab and LF stay.
 * - Complete escape sequences are removed: CSI (`ESC [` or U+009B, parameters, intermediates,
 *   final byte), string sequences OSC/DCS/SOS/PM/APC (`ESC ] P X ^ _` or their C1 forms, up to
 *   BEL or ST), SS2/SS3 with their one character, and two-character escapes (`ESC 7`, `ESC ( B`).
 * - Every other control character is shown as visible text: C0 as its Unicode control picture
 *   (ESC as `␛`, BEL as `␇`, NUL as `␀`), DEL as `␡`, and a C1 character as `␛` plus its 7-bit
 *   equivalent (U+009B as `␛[`, U+0085 as `␛E`).
 *
 * The result holds no C0 character except tab and LF, no DEL and no C1 character. The function
 * is idempotent and leaves text without control characters unchanged. Structured and API
 * transports never call it: no terminal is involved there, so their text stays exact.
 */
export function paneText(input: string): string {
  let out = '';
  let i = 0;
  const n = input.length;
  while (i < n) {
    const c = input.charCodeAt(i);
    if (c === 0x0d) {
      out += '\n';
      i += input.charCodeAt(i + 1) === 0x0a ? 2 : 1;
      continue;
    }
    if (c === 0x09 || c === 0x0a) {
      out += input[i];
      i++;
      continue;
    }
    if (c === 0x1b || (c >= 0x80 && c <= 0x9f)) {
      const end = sequenceEnd(input, i);
      if (end > i) {
        i = end;
        continue;
      }
      out += c === 0x1b ? '␛' : `␛${String.fromCharCode(c - 0x40)}`;
      i++;
      continue;
    }
    if (c < 0x20) out += String.fromCharCode(0x2400 + c);
    else if (c === 0x7f) out += '␡';
    else out += input[i];
    i++;
  }
  return out;
}

/**
 * paneText, refusing a message that has nothing left to send (only escape sequences): an empty
 * paste would leave the CLI idle and cal waiting for a turn that never starts.
 */
export function paneMessage(message: string): string {
  const text = paneText(message);
  if (!text.trim()) throw new CalError('usage', 'the message is empty once its terminal escape sequences are removed');
  return text;
}

const isParam = (c: number) => c >= 0x30 && c <= 0x3f;
const isIntermediate = (c: number) => c >= 0x20 && c <= 0x2f;
const isFinal = (c: number) => c >= 0x40 && c <= 0x7e;

type Introducer = 'csi' | 'string' | 'single-shift' | 'none';

/** What the character at `i` (ESC or a C1 control) introduces, and where its body starts. */
function introducer(s: string, i: number): { kind: Introducer; body: number } {
  const c = s.charCodeAt(i);
  if (c === 0x1b) {
    if (i + 1 >= s.length) return { kind: 'none', body: i + 1 };
    return { kind: kindOfC1(s.charCodeAt(i + 1) + 0x40), body: i + 2 };
  }
  return { kind: kindOfC1(c), body: i + 1 };
}

function kindOfC1(c1: number): Introducer {
  switch (c1) {
    case 0x9b: // CSI (ESC [)
      return 'csi';
    case 0x9d: // OSC (ESC ])
    case 0x90: // DCS (ESC P)
    case 0x98: // SOS (ESC X)
    case 0x9e: // PM  (ESC ^)
    case 0x9f: // APC (ESC _)
      return 'string';
    case 0x8e: // SS2 (ESC N)
    case 0x8f: // SS3 (ESC O)
      return 'single-shift';
    default:
      return 'none';
  }
}

/** The index just past a complete escape sequence starting at `i`, or -1 when there is none. */
function sequenceEnd(s: string, i: number): number {
  const { kind, body } = introducer(s, i);
  switch (kind) {
    case 'csi': {
      let j = body;
      while (j < s.length && isParam(s.charCodeAt(j))) j++;
      while (j < s.length && isIntermediate(s.charCodeAt(j))) j++;
      return j < s.length && isFinal(s.charCodeAt(j)) ? j + 1 : -1;
    }
    case 'string': {
      for (let j = body; j < s.length; j++) {
        const c = s.charCodeAt(j);
        if (c === 0x07 || c === 0x9c) return j + 1;
        if (c === 0x1b && s.charCodeAt(j + 1) === 0x5c) return j + 2;
      }
      return -1;
    }
    case 'single-shift': {
      const c = s.charCodeAt(body);
      return body < s.length && c >= 0x20 && c <= 0x7e ? body + 1 : -1;
    }
    case 'none': {
      if (s.charCodeAt(i) !== 0x1b) return -1;
      // nF escapes (ESC, intermediates, final: `ESC ( B`) and two-character ones (`ESC 7`, `ESC c`).
      let j = i + 1;
      while (j < s.length && isIntermediate(s.charCodeAt(j))) j++;
      const c = s.charCodeAt(j);
      return j < s.length && c >= 0x30 && c <= 0x7e ? j + 1 : -1;
    }
  }
}
