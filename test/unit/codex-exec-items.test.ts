import { describe, expect, it } from 'vitest';
import { parseExecStream } from '../../src/adapters/codex/exec.js';
import { TurnStream, type StreamSinks } from '../../src/commands/progress.js';

/**
 * Issue 20, item 8: `codex exec --json` reports a tool item when it starts and again when it
 * completes. --stream shows the call at item.started, and its end once (plain output prints no
 * finished line twice). Event shapes as research/codex-cli.md recorded them from the real exec.
 */
const started = { type: 'item.started', item: { id: 'item_1', type: 'command_execution', command: "/bin/bash -lc 'sleep 3; echo hi'", aggregated_output: '', exit_code: null, status: 'in_progress' } };
const completed = { type: 'item.completed', item: { id: 'item_1', type: 'command_execution', command: "/bin/bash -lc 'sleep 3; echo hi'", aggregated_output: 'hi\n', exit_code: 0, status: 'completed' } };
const lines = (...events: unknown[]) => events.map((e) => JSON.stringify(e)).join('\n') + '\n';

function sinks(): StreamSinks & { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, stdout: (t) => void out.push(t), stderr: (t) => void err.push(t) };
}

describe('codex exec tool items', () => {
  it('item.started records the call as running; item.completed updates the same entry', () => {
    const head = { type: 'thread.started', thread_id: 't1' };
    expect(parseExecStream(lines(head, started)).tools).toEqual([{ kind: 'shell', name: 'sleep 3; echo hi' }]);
    expect(parseExecStream(lines(head, started, completed)).tools).toEqual([{ kind: 'shell', name: 'sleep 3; echo hi', status: 'completed', output: 'hi\n' }]);
    // An item seen only completed (no started) is one entry too.
    expect(parseExecStream(lines(head, completed)).tools).toHaveLength(1);
  });

  it('--stream (plain): the running call at once, then its end: two different lines, never the finished one twice', () => {
    const s = sinks();
    const stream = new TurnStream(false, s);
    const view = (text: string) => ({ observation: { phase: 'running' }, tools: parseExecStream(text).tools, partialAnswer: '' });
    stream.update(view(lines(started)));
    expect(s.err).toEqual(['tool: shell sleep 3; echo hi (running)\n']);
    stream.update(view(lines(started, completed)));
    expect(s.err).toEqual(['tool: shell sleep 3; echo hi (running)\n', 'tool: shell sleep 3; echo hi → completed: hi\n']);

    const late = sinks();
    new TurnStream(false, late).update(view(lines(completed)));
    expect(late.err).toEqual(['tool: shell sleep 3; echo hi → completed: hi\n']);
  });

  it('--stream --json: a call event at item.started, a result event at item.completed', () => {
    const s = sinks();
    const stream = new TurnStream(true, s);
    stream.update({ observation: { phase: 'running' }, tools: parseExecStream(lines(started)).tools, partialAnswer: '' });
    stream.update({ observation: { phase: 'running' }, tools: parseExecStream(lines(started, completed)).tools, partialAnswer: '' });
    expect(s.out.map((l) => JSON.parse(l))).toEqual([
      { type: 'tool', phase: 'call', kind: 'shell', name: 'sleep 3; echo hi' },
      { type: 'tool', phase: 'result', kind: 'shell', name: 'sleep 3; echo hi', status: 'completed', output: 'hi\n' },
    ]);
  });
});
