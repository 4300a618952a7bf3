import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadRegisteredAdapters } from '../../src/adapters/registry.js';
import { geminiAdapter } from '../../src/adapters/gemini/index.js';
import type { CliAdapter } from '../../src/adapters/types.js';
import { ClaudeTurnObserver, normaliseForMatch as claudeStored } from '../../src/adapters/claude-code/transcript.js';
import { prepareMessage } from '../../src/engine/message.js';
import { CalError } from '../../src/errors.js';
import { blanks, invisible, leads, piece } from '../support/generated-messages.js';

/**
 * Issue 13's property: whatever a message holds (control bytes, escape sequences, blanks and
 * invisible characters, a leading / ! @ #), what cal types into a CLI's pane is text that CLI
 * will not run as a command, or cal refuses the message with `usage` before anything is sent.
 * Each CLI's input rules below are the measured ones (docs/security.md); the real-CLI tests
 * (leading-characters, paste-escape) check samples of the same classes against the binaries.
 */
const message = fc
  .tuple(fc.array(piece, { maxLength: 4 }), fc.constantFrom(...leads), fc.string({ maxLength: 12 }), fc.array(piece, { maxLength: 3 }))
  .map(([before, lead, body, after]) => `${before.join('')}${lead}exit${body}${after.join('')}`);

const INVISIBLE_OR_BLANK = /^[\s\p{Default_Ignorable_Code_Point}\p{Cf}]*/u;

/**
 * Whether each CLI would run what is typed as a command (measured rules): Claude Code trims
 * blanks and strips zero-width and format characters before it reads a leading '/', and opens
 * bash mode or a memory note on a first '!' or '#'; Pi's editor trims leading blanks (JavaScript
 * trim, which keeps U+200B) before it reads '!' or '/'; Codex reads a first '/' or '!', also behind
 * leading blanks (a pasted LF), but one space right before it keeps it text; Gemini trims before it reads '/' (not '//' or '/*')
 * and opens shell mode on a first '!'.
 */
const runsCommand: Record<string, (typed: string) => boolean> = {
  'claude-code': (typed) => /^\//.test(typed.replace(INVISIBLE_OR_BLANK, '')) || /^[!#]/.test(typed),
  pi: (typed) => /^[!/]/.test(typed.trimStart()),
  codex: (typed) => /^\s*[!/]/.test(typed) && !/^ [!/]/.test(typed),
  gemini: (typed) => /^[\s\p{Default_Ignorable_Code_Point}\p{Cf}]*\/(?![/*])/u.test(typed) || /^!/.test(typed),
};

const registered = new Map<string, CliAdapter>((await loadRegisteredAdapters()).map((a) => [a.name, a]));

function adapterFor(name: string): CliAdapter {
  return name === 'gemini' ? geminiAdapter : (registered.get(name) as CliAdapter);
}

describe('messages into panes, for every CLI (property)', () => {
  for (const name of Object.keys(runsCommand)) {
    it(`${name}: typed text is inert (no control byte but tab and LF, no command start), or the message is refused with usage`, () => {
      const adapter = adapterFor(name);
      fc.assert(
        fc.property(message, (m) => {
          let typed: string;
          try {
            typed = prepareMessage(adapter, 'tmux', m).typed;
          } catch (err) {
            expect(err).toBeInstanceOf(CalError);
            expect((err as CalError).kind).toBe('usage');
            return;
          }
          expect(typed).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
          // A backslash right before Enter is a new line, not a submit (Claude Code, Pi).
          expect(typed).not.toMatch(/\\[\p{Default_Ignorable_Code_Point}\p{Cf}]*$/u);
          expect(runsCommand[name]!(typed), JSON.stringify({ m, typed })).toBe(false);
        }),
        { numRuns: 400 },
      );
    });
  }

  it('the structured transport has no terminal: the text goes exactly as given', () => {
    fc.assert(
      fc.property(message, (m) => {
        expect(prepareMessage(adapterFor('codex'), 'structured', m)).toEqual({ text: m, typed: m });
      }),
    );
  });

  it('a message with no visible text is refused, whatever invisible characters and blanks make it up', () => {
    fc.assert(
      // (VT and FF are controls, which reach the pane as visible pictures: not among these.)
      fc.property(fc.array(fc.constantFrom(...invisible, ...blanks.filter((b) => b !== '\u000b' && b !== '\u000c')), { minLength: 1, maxLength: 6 }), (parts) => {
        expect(() => prepareMessage(adapterFor('claude-code'), 'tmux', parts.join(''))).toThrow(/no visible text|empty/);
      }),
    );
  });

  it('Claude Code: a prompt stored as Claude stores it (invisibles dropped, U+2028 as LF, tabs as spaces) is matched to its own message', () => {
    const stored = (text: string) => text.replace(/[\u200b\u2060\ufeff\u202e\u00ad]/g, '').replace(/\u2028/g, '\n').replace(/\t/g, '    ');
    fc.assert(
      fc.property(fc.tuple(fc.string({ minLength: 1, maxLength: 20 }), fc.array(fc.constantFrom('\u200b', '\u2060', '\ufeff', '\u202e', '\u00ad', '\u2028', '\t'), { maxLength: 4 })), ([body, extra]) => {
        const m = `x${extra.join('')}${body}`;
        fc.pre(claudeStored(m).length > 0);
        const o = new ClaudeTurnObserver(m);
        o.feed({ type: 'user', promptId: 'p1', message: { role: 'user', content: stored(m) } });
        expect(o.observation.phase, JSON.stringify(m)).toBe('running');
      }),
    );
    const interrupted = new ClaudeTurnObserver('[Request interrupted by user] not really');
    interrupted.feed({ type: 'user', promptId: 'p2', message: { role: 'user', content: '[Request interrupted by user] not really' } });
    expect(interrupted.observation.phase).toBe('running');
  });
});
