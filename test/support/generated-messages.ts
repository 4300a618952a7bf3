import fc from 'fast-check';

/**
 * The pieces of issue 13's generated messages, shared by the pure property test
 * (test/security/message-properties.test.ts) and the one against the real CLIs
 * (test/security/message-properties-cli.test.ts): what a TUI passes over or acts on before it
 * reads a message as text.
 */
export const invisible = ['\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u00ad', '\u034f', '\u180e', '\u202e', '\u2066'];
export const blanks = [' ', '\t', '\n', '\r', '\r\n', '\u00a0', '\u3000', '\u2028', '\u2003', '\u000b', '\u000c'];
export const escapes = ['\u001b[0m', '\u009b0m', '\u001b]0;t\u0007', '\u001b7', '\u001b[201~', '\u001bP1;2|x\u001b\\', '\u001bOA', '\u001b(B'];
export const controls = ['\u0000', '\u0003', '\u0004', '\u0015', '\u001b', '\u007f', '\u0085', '\u009c'];
export const leads = ['/', '!', '@', '#', '-', '//', '/*', ''];

export const piece = fc.oneof(fc.constantFrom(...invisible), fc.constantFrom(...blanks), fc.constantFrom(...escapes), fc.constantFrom(...controls));

/**
 * A message for a real CLI: pieces, a leading character, a command the CLI would run if it read
 * the message as one (`exit`, `quit`, or `touch <marker>`, which leaves a file if a shell ran
 * it), the visible `nonce` that finds the message in the model's request log, then text mixed
 * with more pieces.
 */
export function cliMessage(nonce: string, marker: string): fc.Arbitrary<string> {
  return fc
    .tuple(
      fc.array(piece, { maxLength: 3 }),
      fc.constantFrom(...leads),
      fc.constantFrom('exit', 'quit', `touch ${marker}`),
      fc.array(fc.oneof(piece, fc.string({ minLength: 1, maxLength: 6 })), { maxLength: 4 }),
      fc.array(piece, { maxLength: 2 }),
    )
    .map(([before, lead, command, middle, after]) => `${before.join('')}${lead}${command} ${nonce}${middle.join('')}${after.join('')}`);
}
