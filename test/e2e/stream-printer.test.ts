import { describe, expect, it } from 'vitest';
import { ClaudeTurnObserver } from '../../src/adapters/claude-code/transcript.js';
import { TurnStream, type ProgressView, type StreamSinks } from '../../src/commands/progress.js';

/**
 * The --stream printer on the real Claude Code observer, fed a transcript shaped like the ones
 * Claude Code 2.1.328 writes (one record per content block). The end-to-end proof with the
 * real binary is stream.test.ts; this pins the printer's own rules.
 */
let uuid = 0;
const user = (text: string, promptId: string) => ({ type: 'user', promptId, uuid: `u${++uuid}`, message: { role: 'user', content: text } });
const text = (t: string, id: string) => ({ type: 'assistant', message: { id, content: [{ type: 'text', text: t }], stop_reason: null } });
const toolUse = (command: string, id: string, useId: string) => ({
  type: 'assistant',
  message: { id, content: [{ type: 'tool_use', id: useId, name: 'Bash', input: { command } }], stop_reason: 'tool_use' },
});
const toolResult = (useId: string, output: string, promptId: string) => ({
  type: 'user',
  promptId,
  message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: useId, content: output, is_error: false }] },
});
const turnEnd = () => ({ type: 'system', subtype: 'turn_duration', durationMs: 10 });

const earlier = [
  user('first [[cal:shell=echo early]]', 'p1'),
  text('EARLY preface', 'm1'),
  toolUse('echo early', 'm1', 'tu1'),
  toolResult('tu1', 'early', 'p1'),
  text('EARLY done', 'm2'),
  turnEnd(),
];
const ours = [
  user('second [[cal:shell=sleep 2; echo hi]]', 'p2'),
  text("I'll run it", 'm3'),
  toolUse('sleep 2; echo hi', 'm3', 'tu2'),
  toolResult('tu2', 'hi', 'p2'),
  text('Tool finished: hi', 'm4'),
  turnEnd(),
];

function capture(): StreamSinks & { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, stdout: (t) => void out.push(t), stderr: (t) => void err.push(t) };
}

function play(stream: TurnStream, records: unknown[][], message = 'second [[cal:shell=sleep 2; echo hi]]'): ClaudeTurnObserver {
  const observer = new ClaudeTurnObserver(message);
  for (const batch of records) {
    for (const r of batch) observer.feed(r);
    stream.update(observer as ProgressView);
  }
  return observer;
}

describe('--stream printer', () => {
  it('--json: text and tool events of the current turn, in order, none from the earlier turn', () => {
    const sinks = capture();
    const stream = new TurnStream(true, sinks);
    // Records arrive one at a time, the earlier turn included (the worst case for the boundary).
    play(stream, [...earlier, ...ours].map((r) => [r]));
    const events = sinks.out.map((l) => JSON.parse(l));
    expect(events).toEqual([
      { type: 'text', text: "I'll run it" },
      { type: 'tool', phase: 'call', kind: 'shell', name: 'sleep 2; echo hi', input: { command: 'sleep 2; echo hi' } },
      { type: 'tool', phase: 'result', kind: 'shell', name: 'sleep 2; echo hi', status: 'completed', output: 'hi' },
      { type: 'text', text: 'Tool finished: hi' },
    ]);
    expect(sinks.out.join('')).not.toContain('EARLY');
    expect(sinks.out.join('')).not.toContain('echo early');
    expect(sinks.err).toEqual([]);
  });

  it('several records in one read keep the order: results, then text, then new calls', () => {
    const sinks = capture();
    const stream = new TurnStream(true, sinks);
    play(stream, [[ours[0], ours[1], ours[2]], [ours[3], ours[4], ours[5]]]);
    expect(sinks.out.map((l) => JSON.parse(l)).map((e) => `${e.type}:${e.phase ?? e.text}`)).toEqual([
      "text:I'll run it",
      'tool:call',
      'tool:result',
      'text:Tool finished: hi',
    ]);
  });

  it('plain: the text on stdout as it comes (whole lines; the rest when its block or the turn ends), one line per tool event on stderr, the answer not printed twice', () => {
    const sinks = capture();
    const stream = new TurnStream(false, sinks);
    const observer = play(stream, ours.map((r) => [r]));
    // A new block (after the tool) printed the first one's line; the turn's end prints the last.
    expect(sinks.out.join('')).toBe("I'll run it\n");
    stream.flush();
    expect(sinks.out.join('')).toBe("I'll run it\nTool finished: hi\n");
    expect(sinks.err).toEqual(['tool: shell sleep 2; echo hi (running)\n', 'tool: shell sleep 2; echo hi → completed: hi\n']);
    const answer = observer.observation.phase === 'ended' ? observer.observation.answer : null;
    expect(answer).toBe('Tool finished: hi');
    expect(stream.covers(answer)).toBe(true);
    expect(stream.covers('something else')).toBe(false);
  });

  it('a growing text (an observer that reports deltas) prints only the new part each time', () => {
    const sinks = capture();
    const stream = new TurnStream(true, sinks);
    for (const partialAnswer of ['Hel', 'Hello', 'Hello', 'Hello, world']) {
      stream.update({ observation: { phase: 'running' }, tools: [], partialAnswer });
    }
    expect(sinks.out.map((l) => JSON.parse(l).text)).toEqual(['Hel', 'lo', ', world']);
  });

  it('plain: token deltas that split words are printed as whole lines, the last one when the turn ends', () => {
    const sinks = capture();
    const stream = new TurnStream(false, sinks);
    for (const partialAnswer of ['Hel', 'Hello wor', 'Hello world\nSecond', 'Hello world\nSecond line']) {
      stream.update({ observation: { phase: 'running' }, tools: [], partialAnswer });
    }
    expect(sinks.out).toEqual(['Hello world\n']);
    stream.flush();
    expect(sinks.out).toEqual(['Hello world\n', 'Second line\n']);
  });

  it('nothing is printed while the observer is still waiting for our message', () => {
    const sinks = capture();
    const stream = new TurnStream(true, sinks);
    stream.update({ observation: { phase: 'waiting' }, tools: [{ kind: 'shell', name: 'x' }], partialAnswer: 'stale' });
    expect(sinks.out).toEqual([]);
  });
});
