import { INTERRUPT_KEY_GAP_MS, type CliAdapter } from '../adapters/types.js';

interface KeyPane {
  sendKeys(paneId: string, keys: string[]): Promise<unknown>;
  capture(paneId: string): Promise<string>;
}

/** Keys one at a time, INTERRUPT_KEY_GAP_MS apart: two Escapes in one write read as Alt+Escape. */
export async function pressOneByOne(tmux: Pick<KeyPane, 'sendKeys'>, paneId: string, keys: readonly string[]): Promise<void> {
  for (const [i, key] of keys.entries()) {
    if (i > 0) await new Promise((r) => setTimeout(r, INTERRUPT_KEY_GAP_MS));
    await tmux.sendKeys(paneId, [key]);
  }
}

/** How often a pane that has not taken its message yet is looked at for a start-up dialog. */
const DIALOG_CHECK_EVERY_MS = 2000;
const MAX_DIALOG_ANSWERS = 2;

/**
 * A start-up dialog cal had already answered in the CLI's config, found open in the pane anyway:
 * 16 Claude Code starts at once in one HOME, where a CLI's own rewrite of ~/.claude.json can drop
 * a folder's trust entry that cal wrote before the CLI of that folder read it. The adapter names
 * the keys that give the answer cal wrote (adapter.preAnsweredDialogKeys). The pane is only the
 * control channel here: whether the message was taken is still the transcript's to say.
 * Returns the check to call while the message is not taken, with the milliseconds since the send.
 */
export function preAnsweredDialogs(adapter: Pick<CliAdapter, 'preAnsweredDialogKeys'>, tmux: KeyPane, paneId: string): (sinceSendMs: number) => Promise<void> {
  let answers = 0;
  let lastCheck = 0;
  return async (sinceSendMs) => {
    const keysFor = adapter.preAnsweredDialogKeys;
    if (!keysFor || answers >= MAX_DIALOG_ANSWERS || sinceSendMs - lastCheck < DIALOG_CHECK_EVERY_MS) return;
    lastCheck = sinceSendMs;
    const keys = keysFor(await tmux.capture(paneId));
    if (!keys?.length) return;
    answers++;
    await pressOneByOne(tmux, paneId, keys);
  };
}
