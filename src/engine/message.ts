import type { Lead, MessageGuard } from '../adapters/message-guard.js';
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
 * that cleaning, since the CLI decides on what reaches it, and then guarded as the adapter's
 * `messageGuard` declares (a leading '!' kept text, a '/' the CLI would run refused). A message
 * the CLI would run as a command however it is guarded is a `usage` error. The structured and
 * ACP transports have no terminal: their text stays exact (their adapters pass it on stdin, after
 * `--` or as the prompt's text), guarded by what the CLI's headless or ACP mode declares.
 */
export function prepareMessage(adapter: CliAdapter, transport: Transport, message: string): PreparedMessage {
  if (transport !== 'tmux') {
    const guard = transport === 'structured' ? adapter.structured?.messageGuard : transport === 'acp' ? adapter.acp?.messageGuard : undefined;
    return { text: message, typed: guard ? guardedText(adapter.name, guard, message, transport === 'acp' ? 'as an ACP agent' : 'in its headless mode') : message };
  }
  const text = paneMessage(message);
  // A TUI drops invisible characters and blanks from its input box: such a message would never
  // be submitted, and cal would wait for a turn that cannot start.
  if (!text.replace(INVISIBLE_OR_BLANK, '')) {
    throw new CalError('usage', 'the message has no visible text (only blanks and invisible characters)');
  }
  if (!adapter.messageGuard) throw new CalError('usage', `${adapter.name} has no pane in cal; use --transport structured`);
  const typed = guardedText(adapter.name, adapter.messageGuard, text, 'in its pane');
  return { text, typed: submittable(adapter.messageGuard.endsWithSpace && !/\s$/.test(typed) ? `${typed} ` : typed) };
}

const INVISIBLE_OR_BLANK = /[\s\p{Default_Ignorable_Code_Point}\p{Cf}]/gu;
const PASSED_OVER: Record<MessageGuard['passesOver'], RegExp> = {
  blanks: /^\s*/u,
  'blanks-and-invisible': /^[\s\p{Default_Ignorable_Code_Point}\p{Cf}]*/u,
};
const ZERO_WIDTH_SPACE = '\u200b';

/**
 * What is typed for `text` by the CLI's declared guard (src/adapters/message-guard.ts), or a
 * `usage` error when no guard keeps it text. Decided on what the CLI itself reads: the message
 * past the characters it passes over.
 */
export function guardedText(cli: string, guard: MessageGuard, text: string, where: string): string {
  if (guard.maxPasteBytes !== undefined && Buffer.byteLength(text) > guard.maxPasteBytes) {
    throw new CalError('usage', `the message is ${Math.ceil(Buffer.byteLength(text) / 1024)} KB; ${cli}'s pane takes at most ${Math.floor(guard.maxPasteBytes / 1024)} KB in one paste: use --transport structured, or put it in a file and ask the agent to read it`);
  }
  const skipped = (PASSED_OVER[guard.passesOver].exec(text)?.[0] ?? '').length;
  const visible = text.slice(skipped);
  const invisibleGuardWorks = guard.passesOver === 'blanks';
  const words = guard.commandWords;
  // Compared as the CLI compares (JavaScript's trim, lower case): `  EXIT\n` is `exit`.
  if (words && words.words.includes(visible.trimEnd().toLowerCase())) {
    if (words.action === 'refuse' || !invisibleGuardWorks) throw refusal(cli, where, words.means, 'put more words in the message');
    return ZERO_WIDTH_SPACE + text;
  }
  const lead = visible[0] as Lead | undefined;
  const rule = lead !== undefined && Object.hasOwn(guard.leads, lead) ? guard.leads[lead] : null;
  if (!rule || rule.means === null || rule.action === 'keep') return text;
  if (rule.unlessFollowedBy && visible.length > 1 && rule.unlessFollowedBy.includes(visible[1]!)) return text;
  if (skipped > 0 && rule.readAt === 'start') return text;
  const refuse = () => refusal(cli, where, rule.means, `put text before the "${lead}"`);
  switch (rule.action) {
    case 'refuse':
      throw refuse();
    case 'space':
      if (skipped === 0) return ` ${text}`;
      if (!invisibleGuardWorks) throw refuse();
      return ZERO_WIDTH_SPACE + text;
    case 'zero-width-space':
      if (!invisibleGuardWorks) throw refuse();
      return ZERO_WIDTH_SPACE + text;
  }
}

function refusal(cli: string, where: string, means: string, fix: string): CalError {
  return new CalError('usage', `${cli} would take this message as a command ${where}: ${means}; ${fix}`);
}

/**
 * A backslash right before Enter asks Claude Code's and Pi's input box for a new line instead of
 * a submit (measured: a message ending in `\` never started its turn). A space after it, which
 * the CLIs trim, keeps Enter a submit; invisible characters after the backslash do not count.
 */
function submittable(typed: string): string {
  return /\\[\p{Default_Ignorable_Code_Point}\p{Cf}]*$/u.test(typed) ? `${typed} ` : typed;
}
