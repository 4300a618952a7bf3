import { afterEach, describe, expect, it, vi } from 'vitest';
import { renderTurn } from '../../src/commands/common.js';
import { TurnStream } from '../../src/commands/progress.js';
import type { TurnResult } from '../../src/index.js';
import { stripTerminalControls } from '../../src/util/terminal-text.js';

/**
 * An answer is the model's text, and a model can be made to write anything: on 91258d3 its
 * escape sequences reached the user's terminal raw (a clipboard write, a hidden link, a cleared
 * screen, a new window title). On a terminal they are removed; --json and a pipe keep the text
 * exact.
 */
const ESC = '\x1b';
const HOSTILE: [string, string][] = [
  ['clipboard write (OSC 52, BEL)', `${ESC}]52;c;ZWNobyBwd25lZA==\x07`],
  ['window title (OSC 0, ST)', `${ESC}]0;owned${ESC}\\`],
  ['hidden link (OSC 8)', `${ESC}]8;;https://evil.example/${ESC}\\`],
  ['clear screen (CSI 2J) and cursor home', `${ESC}[2J${ESC}[H`],
  ['colour', `${ESC}[31;1m`],
  ['private mode (bracketed paste off)', `${ESC}[?2004l`],
  ['DCS', `${ESC}Pq#0;2;0;0;0${ESC}\\`],
  ['8-bit CSI', '\u009b2J'],
  ['8-bit OSC', '\u009d0;owned\u0007'],
  ['an OSC never ended', `${ESC}]0;owned`],
  ['a lone ESC', ESC],
  ['carriage return over the line', '\rrm -rf ~'],
  ['backspace and BEL', '\b\b\x07'],
];

describe('stripTerminalControls', () => {
  for (const [name, seq] of HOSTILE) {
    it(`removes ${name}`, () => {
      const out = stripTerminalControls(`before ${seq} after`);
      expect(out).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
      expect(out.startsWith('before ')).toBe(true);
      // A sequence never ended takes what follows, as the terminal would (never shown raw either way).
      if (!/never ended|lone ESC/.test(name)) expect(out.endsWith(' after')).toBe(true);
    });
  }

  it('keeps text, newlines, tabs and every printable Unicode character', () => {
    const text = 'line 1\n\tindented ünïcødé ✓ 日本語 — “quotes” 🚀 $HOME `x` [brackets] 100%\nlast';
    expect(stripTerminalControls(text)).toBe(text);
    expect(stripTerminalControls('a\r\nb')).toBe('a\nb');
  });
});

describe('an answer printed by cal', () => {
  const answer = `Done.${ESC}]52;c;ZWNobyBwd25lZA==\x07${ESC}[2J\nsecond line`;
  const result = {
    handle: { id: 'h1', provider: { provider: 'claude-code', cli: null } },
    turn: { id: 't1', status: 'completed', answer, turnKey: null, error: null, tools: [] },
  } as unknown as TurnResult;
  const out: string[] = [];
  const tty = process.stdout.isTTY;

  function capture(isTTY: boolean): void {
    out.length = 0;
    Object.defineProperty(process.stdout, 'isTTY', { value: isTTY, configurable: true });
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out.push(String(chunk));
      return true;
    });
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  }
  afterEach(() => {
    vi.restoreAllMocks();
    Object.defineProperty(process.stdout, 'isTTY', { value: tty, configurable: true });
  });

  it('on a terminal: without its control sequences', () => {
    capture(true);
    renderTurn(result, {});
    expect(out.join('')).toBe('Done.\nsecond line\n');
  });

  it('on a pipe: exact', () => {
    capture(false);
    renderTurn(result, {});
    expect(out.join('')).toBe(`${answer}\n`);
  });

  it('with --json, on a terminal too: exact (JSON escapes the control characters)', () => {
    capture(true);
    renderTurn(result, { json: true });
    expect(out.join('')).not.toContain(ESC);
    expect(JSON.parse(out.join('')).turn.answer).toBe(answer);
  });

  it('--stream on a terminal: the streamed text without them', () => {
    capture(true);
    new TurnStream(false).update({ observation: { phase: 'running' }, tools: [], partialAnswer: `${answer}\n` });
    expect(out.join('')).toBe('Done.\nsecond line\n');
  });
});
