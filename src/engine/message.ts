import type { CliAdapter } from '../adapters/types.js';
import { CalError } from '../errors.js';
import type { Transport } from '../handles/schema.js';
import { paneMessage } from './pane-text.js';

/**
 * The one place where a message is checked and turned into what the CLI receives
 * (docs/security.md, "Messages into panes").
 */
export interface PreparedMessage {
  /** The text the CLI will see and record: its transcript is matched against this. */
  text: string;
  /** What is typed: pasted into the pane or handed to the launch argv. */
  typed: string;
}

/**
 * A terminal gets inert text (escape sequences removed, controls made visible), checked AFTER
 * that cleaning, since the CLI decides on what reaches it, and then guarded by the adapter (a
 * leading '!' kept text). A message the CLI would run as a command however it is guarded is a
 * `usage` error. The structured transport has no terminal: its text stays exact.
 */
export function prepareMessage(adapter: CliAdapter, transport: Transport, message: string): PreparedMessage {
  if (transport !== 'tmux') return { text: message, typed: message };
  const text = paneMessage(message);
  // A TUI drops invisible characters and blanks from its input box: such a message would never
  // be submitted, and cal would wait for a turn that cannot start.
  if (!text.replace(/[\s\p{Default_Ignorable_Code_Point}\p{Cf}]/gu, '')) {
    throw new CalError('usage', 'the message has no visible text (only blanks and invisible characters)');
  }
  const refusal = adapter.refuseMessage?.(text);
  if (refusal) throw new CalError('usage', refusal);
  return { text, typed: adapter.pasteText(text) };
}
