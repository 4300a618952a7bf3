import { TEXT, type MessageGuard } from '../message-guard.js';

/** What Gemini CLI and its fork Qwen Code do with a message's first character (measured on both). */
export const geminiLeads: MessageGuard['leads'] = {
  '/': { means: 'a leading "/" runs a slash command', readAt: 'visible', action: 'refuse', unlessFollowedBy: '/*' },
  '!': { means: 'a first "!" opens shell mode', readAt: 'start', action: 'space' },
  '@': { means: 'a leading "@path" includes that file', readAt: 'visible', action: 'keep' },
  '#': TEXT,
  '?': TEXT,
  '&': TEXT,
  '-': TEXT,
  '$': TEXT,
};

/**
 * Gemini trims the input, then runs a leading '/' (but not '//' or '/*') as a slash command
 * (measured on 0.61.0: ' /about' ran /about); it drops invisible format characters first
 * ('\u200b/about' ran /about too), so no guard keeps it text. A leading '!' (shell mode) is a key
 * press on an empty prompt: after a space it is text (measured, pasted and through -i alike).
 * `@path` is Gemini's own file include, the user's to use.
 */
export const geminiMessageGuard: MessageGuard = {
  passesOver: 'blanks-and-invisible',
  leads: geminiLeads,
  // A 100 KB line pasted into 0.61.0 became two prompts (the turn ended lost: "a newer prompt
  // started before this turn recorded its end", test/e2e/hostile-messages.test.ts); 64 KB is
  // below that failure, not a measured safe bound.
  maxPasteBytes: 64 * 1024,
};
