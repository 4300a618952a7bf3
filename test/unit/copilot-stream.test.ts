import { describe, expect, it } from 'vitest';
import { CopilotStreamReader } from '../../src/adapters/copilot/headless.js';
import { fixtureRecords } from '../support/fixtures.js';

/**
 * The structured transport's reader on what `copilot --output-format=json` printed (1.0.102,
 * recorded against the scripted model: four headless turns of one session, each starting with
 * its `session.skills_loaded`): a reply, a shell tool turn, an HTTP 400, and a SIGINT mid-stream
 * (that run wrote `abort` and no closing `result`; another run of the same measurement wrote both).
 */
const records = fixtureRecords('copilot', 'json-stream-tool-error-interrupt');
const runs: any[][] = [];
for (const r of records) {
  if (r.type === 'session.skills_loaded') runs.push([]);
  runs.at(-1)!.push(r);
}

function read(run: any[]): CopilotStreamReader {
  const message = run.find((r) => r.type === 'user.message').data.content as string;
  const reader = new CopilotStreamReader(message);
  for (const r of run) reader.feed(r);
  return reader;
}

describe('copilot --output-format=json, read by the structured transport', () => {
  it('holds four runs', () => {
    expect(runs).toHaveLength(4);
  });

  it('a reply: completed with the message text, closed by its result line (exit 0, the session id)', () => {
    const reader = read(runs[0]!);
    expect(reader.observation).toMatchObject({ phase: 'ended', status: 'completed', answer: 'OK, I will remember the codeword FIG.' });
    expect(reader).toMatchObject({ closed: true, exitCode: 0, sessionId: 'aaaaaaaa-2222-4333-8444-555555555555' });
  });

  it('a tool turn: the model call that asked for the shell does not end it; the bash call is listed with its output', () => {
    const reader = read(runs[1]!);
    expect(reader.observation).toMatchObject({ phase: 'ended', status: 'completed', answer: 'Tool finished: fixture-tool' });
    expect(reader.observer.tools).toMatchObject([{ kind: 'shell', name: 'echo fixture-tool', status: 'completed' }]);
    expect(reader.observer.tools[0]!.output).toContain('fixture-tool');
  });

  it('an HTTP 400: failed with Copilot’s error text, exit 1', () => {
    const reader = read(runs[2]!);
    expect(reader.observation).toMatchObject({ phase: 'ended', status: 'failed', answer: null, error: '400 Mock error 400' });
    expect(reader.exitCode).toBe(1);
  });

  it('SIGINT mid-stream: interrupted by Copilot’s own abort; the deltas streamed before it were the partial answer', () => {
    const run = runs[3]!;
    const reader = new CopilotStreamReader(run.find((r) => r.type === 'user.message').data.content);
    const partials: string[] = [];
    for (const r of run) {
      reader.feed(r);
      partials.push(reader.partialAnswer);
    }
    expect(reader.observation).toMatchObject({ phase: 'ended', status: 'interrupted' });
    expect(reader.closed).toBe(false);
    const streamed = partials.filter(Boolean);
    expect(streamed.length).toBeGreaterThan(1);
    expect('slow answer here'.startsWith(streamed.at(-1)!)).toBe(true);
  });
});
