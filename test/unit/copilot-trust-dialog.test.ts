import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { trustDialogKeys } from '../../src/adapters/copilot/home.js';
import { copilotAdapter } from '../../src/adapters/copilot/index.js';

/**
 * Issue 50: Copilot's trust entry lost to a concurrent rewrite of its config.json. The screen is
 * Copilot CLI 1.0.102's own, captured in tmux (a new folder, `--interactive=hello`); Down then
 * Enter picked "Yes, and remember", after which Copilot wrote the folder to `trustedFolders` and
 * ran the message (measured).
 */
const screen = readFileSync(path.join(import.meta.dirname, '..', 'fixtures', 'copilot-1.0.102-trust-dialog.txt'), 'utf8');

describe("Copilot's folder-trust dialog, answered again as cal answered it in config.json", () => {
  it('moves from "1. Yes" to "2. Yes, and remember this folder for future sessions", then Enter', () => {
    expect(trustDialogKeys(screen)).toEqual(['Down', 'Enter']);
    expect(copilotAdapter.preAnsweredDialogKeys?.(screen)).toEqual(['Down', 'Enter']);
  });

  it('the remember row already selected is Enter alone', () => {
    const moved = screen.replace('❯ 1. Yes ', '  1. Yes ').replace('  2. Yes, and remember', '❯ 2. Yes, and remember');
    expect(trustDialogKeys(moved)).toEqual(['Enter']);
  });

  it('no keys without the dialog: the prompt, or its words in an answer', () => {
    expect(trustDialogKeys('❯ hello\n● Received: hello\n────\n❯\n────')).toBeNull();
    expect(trustDialogKeys('● Do you trust the files in this folder? you asked.\n❯ 2. Yes, and remember this folder for future sessions, I said\n')).toBeNull();
  });
});
