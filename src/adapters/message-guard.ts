/**
 * How a CLI's input box reads the first character of a submitted message, and what cal does about
 * it: part of the contract of every adapter with a pane (`PaneCliAdapter.messageGuard` in
 * types.ts; a pane adapter without one does not build). The engine applies it in one place
 * (`prepareMessage`, src/engine/message.ts) to the pasted text and the launch argv alike; the
 * shared tests (test/unit/message-guards.test.ts over every registered adapter, and
 * test/e2e/hostile-messages.test.ts with every installed pane CLI) hold each adapter to it.
 *
 * Declaring one for a new CLI: read the CLI's input handling in its package or bundle (what it
 * trims, which first characters open a mode, a command or a picker, which whole words it takes
 * as commands), then try each of `LEADS` in its pane in tmux, alone and behind a space, a tab,
 * an LF, U+00A0 and U+200B, against the scripted model (docs/scripted-model.md). Record what was
 * measured, on which version, in each entry's `means`, and the CLI's row in docs/security.md
 * ("Messages into panes").
 */

/**
 * The first characters a CLI may give meaning to. Every guard declares each of them, even when
 * the answer is "text": adding one here makes every pane adapter say what its CLI does with it.
 */
export const LEADS = ['/', '!', '@', '#', '?', '&', '-', '$'] as const;
export type Lead = (typeof LEADS)[number];

/** What cal does with a message whose first visible character the CLI would act on. */
export type LeadAction =
  /**
   * One space in front when the character is the message's very first; the CLI keeps that space
   * and reads the message as text. Behind blanks (which the CLI passes over, so a space would be
   * passed over too) a zero-width space in front instead, or a refusal when the CLI passes over
   * invisible characters as well.
   */
  | 'space'
  /** A zero-width space (U+200B) in front, which the CLI neither trims nor skips: text. */
  | 'zero-width-space'
  /** No guard keeps it text: the message is a `usage` error (exit 2) before anything is recorded. */
  | 'refuse'
  /** The CLI's meaning is the user's to use (Gemini's `@file` include): typed as it is. */
  | 'keep';

export type LeadRule =
  /** The CLI gives the character no meaning at the start of a message: typed as it is. */
  | { readonly means: null }
  | {
      /** What the CLI does with it, as measured (version), e.g. 'runs a shell command (1.0.102)'. */
      readonly means: string;
      /**
       * Where the CLI reads it: 'start' only as the very first character typed (a key that opens
       * a mode on an empty prompt); 'visible' also behind whatever the CLI passes over first.
       */
      readonly readAt: 'start' | 'visible';
      readonly action: LeadAction;
      /** Characters that, right after it, make the CLI read it as text (Gemini: `//`, `/*`). */
      readonly unlessFollowedBy?: string;
    };

/** Whole messages a CLI takes as commands whatever their first character (Copilot's `exit`). */
export interface CommandWords {
  /** Compared with the message once what the CLI passes over is trimmed, ignoring case. */
  readonly words: readonly string[];
  readonly means: string;
  readonly action: 'zero-width-space' | 'refuse';
}

export interface MessageGuard {
  /**
   * What the CLI passes over before it reads the first character (measured):
   * 'blanks': the characters JavaScript's trim removes (space, tab, LF, CR, VT, FF, U+00A0,
   * U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, U+FEFF);
   * 'blanks-and-invisible': those and every format or default-ignorable character (U+200B,
   * U+2060, U+00AD, U+034F, U+180E, …), so no invisible guard works there.
   */
  readonly passesOver: 'blanks' | 'blanks-and-invisible';
  /** Every character of LEADS, declared. */
  readonly leads: Readonly<Record<Lead, LeadRule>>;
  readonly commandWords?: CommandWords;
  /**
   * The largest message (UTF-8 bytes) cal pastes into this CLI's pane: a larger one is a `usage`
   * error (the structured transport takes it). Set where a large paste was measured to break up
   * (Gemini CLI: a 100 KB line became two prompts). Unset: no limit but the terminal's.
   */
  readonly maxPasteBytes?: number;
  /**
   * The CLI opens a completion menu for the last word of its input (`/command`, `@file`), and
   * Enter picks from that menu instead of submitting (Cline CLI: ` /exit` ended it): a space at
   * the end, which the CLI trims from the prompt, closes the menu before Enter.
   */
  readonly endsWithSpace?: boolean;
}

/** The CLI reads this character as text at the start of a message. */
export const TEXT: LeadRule = { means: null };

/** Every first character read as text: a mode that gives none of them a meaning (Codex's `exec`). */
export const ALL_TEXT: MessageGuard['leads'] = { '/': TEXT, '!': TEXT, '@': TEXT, '#': TEXT, '?': TEXT, '&': TEXT, '-': TEXT, '$': TEXT };

/** A headless or ACP mode that reads every first character as text; its text passed on exactly. */
export const TEXT_ONLY_GUARD: MessageGuard = { passesOver: 'blanks', leads: ALL_TEXT };

/**
 * A headless mode that runs a leading '/' (after its blanks) as a command: a zero-width space in
 * front keeps it text, since such a mode compares the trimmed text and JavaScript's trim keeps
 * U+200B. `means` is what was measured on the CLI.
 */
export function slashCommandGuard(means: string, leads: Partial<MessageGuard['leads']> = {}): MessageGuard {
  return { passesOver: 'blanks', leads: { ...ALL_TEXT, '/': { means, readAt: 'visible', action: 'zero-width-space' }, ...leads } };
}
