import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { paneMessage, paneText } from '../../src/engine/pane-text.js';
import { isCalError } from '../../src/errors.js';

/** Any C0 control except tab and LF, DEL, any C1 control. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

const ESC = '\u001b';

describe('paneText: what cal lets into a pane', () => {
  it('removes the bracketed-paste end marker and turns CR into newlines (the measured attack)', () => {
    expect(paneText(`echo harmless${ESC}[201~\rtouch X\r`)).toBe('echo harmless\ntouch X\n');
    expect(paneText(`a${ESC}[200~b${ESC}[201~c`)).toBe('abc');
    expect(paneText('a\r\nb\rc\n')).toBe('a\nb\nc\n');
  });

  it('removes CSI in 7-bit and 8-bit (U+009B) form, OSC/DCS/APC strings, SS3 and two-character escapes', () => {
    expect(paneText(`${ESC}[1;31mred${ESC}[0m`)).toBe('red');
    expect(paneText('x\u009b201~y')).toBe('xy');
    expect(paneText(`t${ESC}]0;title\u0007u`)).toBe('tu');
    expect(paneText(`t${ESC}]8;;http://e.test${ESC}\\link${ESC}]8;;${ESC}\\u`)).toBe('tlinku');
    expect(paneText('t\u009d0;title\u009cu')).toBe('tu');
    expect(paneText(`d${ESC}Pq#0;2;0;0;0${ESC}\\e`)).toBe('de');
    expect(paneText(`a${ESC}_apc${ESC}\\b`)).toBe('ab');
    expect(paneText(`up${ESC}OA!`)).toBe('up!');
    expect(paneText(`${ESC}7save${ESC}8${ESC}(B${ESC}c`)).toBe('save');
  });

  it('shows other control characters visibly', () => {
    expect(paneText('bell\u0007 bs\u0008 nul\u0000 del\u007f')).toBe('bell␇ bs␈ nul␀ del␡');
    expect(paneText('ctrl-c\u0003 ctrl-x\u0018ctrl-s\u0013')).toBe('ctrl-c␃ ctrl-x␘ctrl-s␓');
    expect(paneText(`lone ${ESC}`)).toBe('lone ␛');
    expect(paneText(`${ESC}[20`)).toBe('␛[20');
    expect(paneText(`open ${ESC}]0;never closed`)).toBe('open ␛]0;never closed');
    expect(paneText('nel\u0085 st\u009c csi\u009b')).toBe('nel␛E st␛\\ csi␛[');
    expect(paneText('tab\tkept')).toBe('tab\tkept');
  });

  it('keeps printable text, quotes and non-ASCII exactly', () => {
    const text = `"q" 'q' $(x) \`y\` ünïcødé ✓ 日本語 🚀 [201~ \\e[201~`;
    expect(paneText(text)).toBe(text);
  });

  it('property: no control character but tab and LF survives, for any input', () => {
    const chars = fc.oneof(
      fc.constantFrom(ESC, '[', ']', '\\', '\u0007', '\r', '\n', '\t', '\u009b', '\u009c', '\u009d', '\u0085', '\u007f', 'P', 'O', '2', '0', '1', '~', ';', 'a', '('),
      fc.integer({ min: 0, max: 0xa0 }).map((c) => String.fromCharCode(c)),
      fc.string({ unit: 'grapheme', maxLength: 3 }),
    );
    fc.assert(
      fc.property(fc.array(chars, { maxLength: 60 }).map((a) => a.join('')), (input) => {
        const out = paneText(input);
        expect(out).not.toMatch(CONTROL);
        expect(out).not.toContain('\r');
        expect(paneText(out)).toBe(out);
      }),
      { numRuns: 2000 },
    );
  });

  it('property: text without control characters is unchanged', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), (s) => {
        const clean = s.replace(/[\u0000-\u001f\u007f-\u009f]/g, '');
        expect(paneText(clean)).toBe(clean);
      }),
      { numRuns: 1000 },
    );
  });

  it('a message that is nothing but escape sequences is a usage error, not an empty paste', () => {
    try {
      paneMessage(`${ESC}[31m${ESC}[0m \r\n`);
      expect.unreachable();
    } catch (err) {
      expect(isCalError(err) && err.kind).toBe('usage');
    }
    expect(paneMessage(`hi${ESC}[0m`)).toBe('hi');
  });
});
