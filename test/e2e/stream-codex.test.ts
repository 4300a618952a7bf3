import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';

/**
 * `--stream` on the structured transport: the real `codex exec --json` reports items as they
 * complete, and cal prints them before the turn ends.
 */
describe('--stream with codex exec (structured transport)', () => {
  let suite: CliSuite;

  beforeAll(async () => {
    suite = await cliSuite('codex', { prefix: 'stream-codex' });
  });

  afterAll(async () => {
    await suite?.close();
  });

  it('a finished tool call is streamed seconds before the turn ends', async () => {
    const lines: { at: number; value: any }[] = [];
    const { child } = suite.spawnCal(['start', '--provider', 'codex', '--transport', 'structured', '--cwd', suite.work, '--stream', '--json', 'Two tools [[cal:shell=echo FIRST-OUT]] [[cal:shell=sleep 3; echo SECOND-OUT]]']);
    createInterface({ input: child.stdout! }).on('line', (text) => lines.push({ at: Date.now(), value: JSON.parse(text) }));
    const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? -1)));
    expect(code).toBe(0);
    const final = lines.at(-1)!;
    expect(final.value.turn).toMatchObject({ status: 'completed', answer: 'Tool finished: SECOND-OUT' });
    const first = lines.find((l) => l.value.type === 'tool' && l.value.name === 'echo FIRST-OUT');
    expect(first).toBeDefined();
    expect(final.at - first!.at).toBeGreaterThanOrEqual(2000);
    expect(lines.some((l) => l.value.type === 'text' && l.value.text === 'Tool finished: SECOND-OUT')).toBe(true);
  });
});
