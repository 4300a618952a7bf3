import { CalError } from '../errors.js';
import { wellFormedMessage } from '../util/well-formed.js';
import type { ChatMessage, Turn } from './types.js';

/** A message cal can send: no NUL byte (no terminal or CLI takes one), not blank. */
export function checkMessage(message: string): string {
  if (typeof message !== 'string') throw new CalError('usage', 'the message must be a string');
  if (message.includes('\0')) throw new CalError('usage', `the message contains a NUL byte at offset ${message.indexOf('\0')}`);
  if (!message.trim()) throw new CalError('usage', 'the message is empty');
  return message;
}

/** The conversation a session holds, as the caller sees it: each completed turn's message and answer. */
export function recordedConversation(turns: readonly Turn[]): ChatMessage[] {
  return turns
    .filter((t) => t.status === 'completed')
    .flatMap((t): ChatMessage[] => [
      { role: 'user', content: t.message },
      { role: 'assistant', content: t.answer ?? '' },
    ]);
}

/** Splits a caller's history into the earlier conversation and the new user message (the last one). */
export function splitHistory(messages: readonly ChatMessage[]): { earlier: readonly ChatMessage[]; newMessage: string } {
  if (!Array.isArray(messages) || messages.length === 0) throw new CalError('usage', 'ask() needs messages: the conversation so far, ending with the new user message');
  messages.forEach((m, i) => {
    if (!m || (m.role !== 'user' && m.role !== 'assistant') || typeof m.content !== 'string') {
      throw new CalError('usage', `messages[${i}] is not a {role: 'user' | 'assistant', content: string} message`);
    }
  });
  const last = messages[messages.length - 1] as ChatMessage;
  if (last.role !== 'user') throw new CalError('usage', `the last message (messages[${messages.length - 1}]) is the new one and must be the user's, not the assistant's`);
  return { earlier: messages.slice(0, -1), newMessage: checkMessage(last.content) };
}

const shown = (m: ChatMessage | undefined): string => (m ? `${m.role}: ${clip(m.content)}` : '(no message)');
const clip = (text: string): string => JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);
// A recorded message is the well-formed text that was sent (wellFormedMessage): the caller's copy may still hold the lone surrogate.
const same = (a: ChatMessage, b: ChatMessage): boolean => a.role === b.role && wellFormedMessage(a.content).trim() === wellFormedMessage(b.content).trim();

/**
 * The caller's earlier messages must be exactly the session's recorded conversation: a native
 * session already holds it (so only the new message is sent) and an API session continues from
 * its managed copy. Any difference (an earlier turn edited, dropped or never sent through cal)
 * is a stale_handle naming the first message that differs; the session is never rebuilt from
 * the caller's copy. Surrounding whitespace is not a difference.
 */
export function checkHistory(earlier: readonly ChatMessage[], recorded: readonly ChatMessage[], handleId: string): void {
  const length = Math.max(earlier.length, recorded.length);
  for (let i = 0; i < length; i++) {
    const given = earlier[i];
    const expected = recorded[i];
    if (given && expected && same(given, expected)) continue;
    const why =
      !given
        ? `the history ends before the session's recorded conversation does (${recorded.length} messages recorded, ${earlier.length} given before the new one)`
        : !expected
          ? `the session has no such message: it recorded ${recorded.length} messages, the history has ${earlier.length} before the new one`
          : 'differs from what the session recorded';
    throw new CalError('stale_handle', `stale handle: messages[${i}] ${why} (expected ${shown(expected)}, got ${shown(given)}); continue from the session's own conversation (inspect shows it) or start a new session`, {
      field: `messages[${i}]`,
      expected: expected ?? null,
      actual: given ?? null,
      handle: handleId,
    });
  }
}
