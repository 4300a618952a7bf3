import { describe, expect, it } from 'vitest';
import { readQwenInputBox } from '../../src/adapters/qwen/input-box.js';

/** Rows as tmux capture-pane -e draws Qwen Code 0.24.4's box (measured). */
const rule = '\x1b[38;5;153m' + '─'.repeat(40);
const screen = (row: string, x: number) => ({ lines: ['  \x1b[38;5;183m> \x1b[39mRemember it.', rule, row, rule], cursor: { x, y: 2, visible: true } });

describe("Qwen Code's input box", () => {
  it('is empty under its placeholder, and under a suggested next prompt (ghost text, its first letter in the cursor cell)', () => {
    expect(readQwenInputBox(screen('\x1b[38;5;183m> \x1b[4m\x1b[39m \x1b[0m\x1b[38;5;103m\x1b[49m Type your message or @path/to/file', 2))).toBe('');
    expect(readQwenInputBox(screen('\x1b[38;5;183m> \x1b[4m\x1b[39mS\x1b[0m\x1b[38;5;103m\x1b[49mcripted model session', 2))).toBe('');
  });

  it('holds a draft a person typed, even a one-letter one (the cursor has moved past it)', () => {
    expect(readQwenInputBox(screen('\x1b[38;5;183m> \x1b[39mmy half typed draft\x1b[4m \u200b', 21))).toMatch(/^my half typed draft/);
    expect(readQwenInputBox(screen('\x1b[38;5;183m> \x1b[39mx\x1b[4m \u200b', 3))).toMatch(/^x/);
  });
});
