import { describe, expect, it } from 'vitest';
import { lastWords } from '../../src/engine/tmux-turn.js';

describe("a dead pane's last words", () => {
  it('are its last three non-empty lines, without tmux\'s own', () => {
    expect(lastWords('one\n\ntwo\nthree\nfour\n\nPane is dead (status 1, Fri Dec  4 23:00:00 2026)\n')).toBe('two / three / four');
  });

  it("name the error of a CLI that died on an exception, not only its innermost frames", () => {
    const screen = [
      '> Run it',
      'TypeError: Cannot read properties of undefined (reading \'length\')',
      '    at renderLine (file:///cli/bundle/chunk.js:10:5)',
      '    at commitPassiveMountOnFiber (file:///cli/bundle/chunk.js:6274:29)',
      '    at recursivelyTraversePassiveMountEffects (file:///cli/bundle/chunk.js:6255:13)',
      '',
      'Node.js v20.20.2',
      'Pane is dead (status 1)',
    ].join('\n');
    expect(lastWords(screen)).toBe("TypeError: Cannot read properties of undefined (reading 'length') / at renderLine (file:///cli/bundle/chunk.js:10:5)");
  });

  it('keep the last lines when the screen holds only frames', () => {
    expect(lastWords('at a (x.js:1:1)\nat b (x.js:2:2)\nat c (x.js:3:3)\nat d (x.js:4:4)')).toBe('at b (x.js:2:2) / at c (x.js:3:3) / at d (x.js:4:4)');
  });

  it('take a line that only starts with "at" for words, not a frame', () => {
    expect(lastWords('Error: no reply\nat this point the CLI gives up')).toBe('Error: no reply / at this point the CLI gives up');
  });

  it('are cut to 400 characters', () => {
    expect(lastWords(`${'x'.repeat(1000)}\n`)).toHaveLength(400);
  });
});
