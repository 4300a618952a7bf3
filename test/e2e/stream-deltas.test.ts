import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliSuite, type CliSuite, type SuiteProvider } from '../support/cli-suite.js';

/**
 * Issue 42: `--stream --json` on the structured transport prints the model's text as the CLI
 * streams it, not only at the end. The scripted model answers in 4 chunks 600 ms apart; the real
 * pinned CLI emits them as deltas (Claude `--include-partial-messages`, Pi `message_update`,
 * Gemini `-o stream-json`, Copilot `--output-format=json` `assistant.message_delta`), so cal
 * prints at least two text lines at least 300 ms apart before its final object.
 */
interface Line {
  at: number;
  text: string;
}

function runTimed(suite: CliSuite, args: string[]): Promise<{ code: number; stdout: Line[]; endedAt: number }> {
  return new Promise((resolve, reject) => {
    const { child } = suite.spawnCal(args);
    const stdout: Line[] = [];
    createInterface({ input: child.stdout! }).on('line', (text) => stdout.push({ at: Date.now(), text }));
    const timer = setTimeout(() => child.kill('SIGTERM'), 120_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, endedAt: Date.now() });
    });
  });
}

const REPLY = 'alpha-bravo-charlie-delta-echo-foxtrot';
const MESSAGE = `Stream this [[cal:chunks=4]][[cal:chunk-delay=600]][[cal:reply=${REPLY}]]`;

describe.each<SuiteProvider>(['claude-code', 'pi', 'gemini', 'copilot'])('--stream --json on the structured transport: %s streams deltas', (provider) => {
  let suite: CliSuite;

  beforeAll(async () => {
    suite = await cliSuite(provider, { prefix: `stream-deltas-${provider}` });
  });

  afterAll(async () => {
    await suite?.close();
  });

  async function expectStreamed(args: string[]): Promise<{ handle: string; turn: { id: string } }> {
    const run = await runTimed(suite, [...args, '--stream', '--json', '--timeout', '90', MESSAGE]);
    expect(run.code).toBe(0);
    const events = run.stdout.map((l) => ({ at: l.at, value: JSON.parse(l.text) }));
    const final = events.at(-1)!;
    expect(final.value.turn).toMatchObject({ status: 'completed', answer: REPLY });
    const texts = events.slice(0, -1).filter((e) => e.value.type === 'text');
    expect(texts.length).toBeGreaterThanOrEqual(2);
    // The pieces join to the answer, and arrive spread over the model's stream, not at the end.
    expect(texts.map((e) => e.value.text).join('')).toBe(REPLY);
    expect(texts.at(-1)!.at - texts[0]!.at).toBeGreaterThanOrEqual(300);
    expect(texts[0]!.at).toBeLessThan(final.at);
    return final.value;
  }

  it('start, then continue: text deltas >= 300 ms apart before the final object; cal show prints each turn again', async () => {
    const first = await expectStreamed(['start', '--provider', provider, '--transport', 'structured', '--cwd', suite.work]);
    const second = await expectStreamed(['continue', first.handle]);
    // cal show: the newest turn by default, any turn by id, as continue --json printed it.
    const newest = await suite.cal(['show', first.handle, '--json']);
    expect(newest.code).toBe(0);
    expect(newest.json).toEqual(second);
    const earlier = await suite.cal(['show', first.handle, '--turn', first.turn.id]);
    expect(earlier.code).toBe(0);
    expect(earlier.stdout).toBe(REPLY);
    expect(earlier.stderr).toBe(`handle: ${first.handle}`);
    const missing = await suite.cal(['show', first.handle, '--turn', 'no-such-turn']);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toMatch(/^cal: not_found: /);
  });
});
