/**
 * Hands each line of a CLI's JSON-lines output (`--json`, `-o stream-json`) to `feed` as its
 * parsed value, `undefined` for a line that is not JSON (a release that changed its format shows
 * up as unknown events there, never as a crash; a line torn by a crash, in a log, is skipped the same
 * way). Blank lines are skipped. For text read whole: a CLI's output in tests and fixtures, cal's
 * event log (state/fs.ts), the MCP probe's request log (certify); a live turn feeds each line as it
 * completes (adapters/structured-process.ts).
 */
export function feedJsonLines(stdout: string, feed: (value: unknown) => void): void {
  for (const line of stdout.split('\n')) {
    if (!line.trim()) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      value = undefined;
    }
    feed(value);
  }
}
