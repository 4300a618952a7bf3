/**
 * Text from a CLI or a model (an answer, a tool's name or output, an error the CLI printed) shown
 * on the user's terminal. A terminal obeys escape sequences wherever they come from: an answer
 * holding `ESC ] 52` sets the clipboard, `ESC ] 8` hides a link behind other text, `ESC [ 2 J`
 * clears the screen, a title sequence rewrites the window's title, a carriage return writes over
 * what the line said. So on a terminal every control sequence and control character but newline
 * and tab is removed; in --json and on a pipe the text stays exact (a program reads it, and the
 * JSON encoding escapes every control character). docs/security.md, "Escape sequences in an
 * answer never reach the terminal".
 */

// ESC [ … final byte (CSI); ESC ] … BEL or ST (OSC), ESC P/X/^/_ … ST (DCS, SOS, PM, APC), also
// when the terminator never comes; ESC and the character(s) after it; the 8-bit C1 controls
// (U+0080–U+009F: U+009B is CSI to a terminal that reads them), and the C0 controls but \t and \n.
const SEQUENCES =
  // eslint-disable-next-line no-control-regex
  /\x1b\[[0-?]*[ -/]*[@-~]?|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)?|\x1b[ -/]*[0-~]?|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?|\x9b[0-?]*[ -/]*[@-~]?/g;
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/** `text` with every terminal control sequence and control character removed, but \n and \t (\r\n becomes \n). */
export function stripTerminalControls(text: string): string {
  return text.replace(SEQUENCES, '').replace(/\r\n/g, '\n').replace(CONTROLS, '');
}

/** `text` as it may be written to `stream`: without control sequences when it is a terminal, exact otherwise. */
export function forTerminal(text: string, stream: { isTTY?: boolean } = process.stdout): string {
  return stream.isTTY ? stripTerminalControls(text) : text;
}
