import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { claudeCodeAdapter } from '../../src/adapters/claude-code/index.js';
import { codexAdapter } from '../../src/adapters/codex/index.js';
import { copilotAdapter } from '../../src/adapters/copilot/index.js';
import { geminiAdapter } from '../../src/adapters/gemini/index.js';
import { opencodeAdapter } from '../../src/adapters/opencode/index.js';
import { clineAdapter } from '../../src/adapters/cline/index.js';
import { kiloAdapter } from '../../src/adapters/kilo/index.js';
import { piAdapter } from '../../src/adapters/pi/index.js';
import type { CliAdapter } from '../../src/adapters/types.js';
import { isRule, plainText, typedText } from '../../src/tmux/screen.js';
import { fixturesDir } from '../support/fixtures.js';

/**
 * Issue 41: each adapter reads its CLI's input box off the pane's screen (for the decision to
 * clear a draft before a paste, never for an answer). Driven by screens recorded from the real
 * CLIs of every release of the version matrix (fixtures/screens/<cli>-<version>-input-box.json).
 */
const adapters: Record<string, CliAdapter> = { 'claude-code': claudeCodeAdapter, codex: codexAdapter, copilot: copilotAdapter, gemini: geminiAdapter, pi: piAdapter, opencode: opencodeAdapter, cline: clineAdapter, kilo: kiloAdapter };
const LONG = Array.from({ length: 20 }, (_, i) => `draftword${i % 10}`).join('');

const recorded = readdirSync(path.join(fixturesDir, 'screens')).filter((f) => f.endsWith('-input-box.json'));

describe('the input box read from recorded screens', () => {
  it('covers every CLI that takes pastes, on an old and the pinned release', () => {
    expect(new Set(recorded.map((f) => f.replace(/-\d[\d.]*-input-box\.json$/, '')))).toEqual(new Set(Object.keys(adapters)));
    expect(recorded.length).toBeGreaterThanOrEqual(10);
  });

  it.each(recorded)('%s: empty, a short draft, a 200-character draft, and what one Ctrl-U leaves', (file) => {
    const { cli, screens } = JSON.parse(readFileSync(path.join(fixturesDir, 'screens', file), 'utf8')) as { cli: string; screens: Record<string, string[]> };
    const read = (name: string) => adapters[cli]!.draft!.read({ lines: screens[name]!, cursor: { x: 0, y: 0, visible: false } });
    expect(read('empty')).toBe('');
    expect(read('short-draft')).toBe('my half typed draft');
    expect(read('after-ctrl-u')).toBe('');
    // The first row of a draft wider than the pane: it starts the draft.
    const long = read('long-draft');
    expect(long!.length).toBeGreaterThan(100);
    expect(LONG.startsWith(long!)).toBe(true);
    // Claude Code's Ctrl-U takes one wrapped row: its first row stays. The others empty the box.
    const partial = read('long-after-one-ctrl-u');
    if (cli === 'claude-code') expect(LONG.startsWith(partial!) && partial!.length > 100).toBe(true);
    else expect(partial).toBe('');
  });

  it('a screen with no input box of a known shape reads as null (a dialog, another layout)', () => {
    const dialog = { lines: ['Do you trust the files in this folder?', '❯ 1. Yes, proceed', '  2. No, exit'], cursor: { x: 0, y: 0, visible: false } };
    for (const name of ['claude-code', 'pi']) expect(adapters[name]!.draft!.read(dialog)).toBeNull();
    expect(adapters.codex!.draft!.read({ lines: ['Working (3s)'], cursor: { x: 0, y: 0, visible: true } })).toBeNull();
  });
});

describe("GitHub Copilot CLI's input box (1.0.102, recorded)", () => {
  const { screens } = JSON.parse(readFileSync(path.join(fixturesDir, 'screens', 'copilot-1.0.102-input-box.json'), 'utf8')) as { screens: Record<string, string[]> };
  const read = (name: string) => copilotAdapter.draft!.read({ lines: screens[name]!, cursor: { x: 0, y: 0, visible: true } });

  it('reads the marker alone as empty, a one-letter draft and a completed slash command as drafts', () => {
    expect(read('empty')).toBe('');
    expect(read('one-letter')).toBe('x');
    expect(read('slash-completion')).toBe('/add-dir');
  });

  it('reads the first line of a multi-line draft, and what stays after one End Ctrl-U', () => {
    expect(read('multi-line')).toBe('line one');
    expect(read('multi-after-ctrl-u')).toBe('line one');
  });

  it('reads no box under the folder-trust dialog', () => {
    expect(read('trust-dialog')).toBeNull();
  });
});

describe('screen styles', () => {
  it('dim text and an inverse cursor cell before it are a placeholder, not typed text', () => {
    const row = '\x1b[0m\x1b[39m\x1b[49m>\xa0\x1b[7mT\x1b[0;2m\x1b[39m\x1b[49mry "fix typecheck errors"';
    expect(plainText(row)).toBe('> Try "fix typecheck errors"');
    expect(typedText(row)).toBe('> ');
    expect(typedText('\x1b[1m›\x1b[0m my half typed draft')).toBe('› my half typed draft');
    expect(typedText('> \x1b[7m \x1b[0m\x1b[38;5;248m Type here', ['38;5;248'])).toBe('> ');
    // A typed letter under the cursor, followed by typed text, stays typed.
    expect(typedText('> \x1b[7mm\x1b[0my draft')).toBe('> my draft');
  });

  it('a rule is a row of one box-drawing character', () => {
    expect(isRule(`\x1b[38;5;244m${'─'.repeat(80)}`)).toBe(true);
    expect(isRule('▄'.repeat(40))).toBe(true);
    expect(isRule('── name ──')).toBe(false);
    expect(isRule('> draft')).toBe(false);
  });
});
