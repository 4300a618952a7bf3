import { describe, expect, it } from 'vitest';
import { lastErrorLine, parseExecStream, unwrapShell } from '../../src/adapters/codex/exec.js';
import { CodexTurnObserver, classifyRecord, shellCommandText } from '../../src/adapters/codex/rollout.js';
import { ended, feedFixture, fixtureRecords, fixtureText } from '../support/fixtures.js';

/** Parser tests over rollouts and `exec --json` streams recorded from the real Codex 0.169.0. */
const records = (name: string) => fixtureRecords('codex', name);
const observe = (name: string, message: string) => feedFixture(new CodexTurnObserver(message), 'codex', name);

describe('Codex rollout observer (recorded 0.169.0 rollouts)', () => {
  it('every record of every recorded rollout has a known kind', () => {
    for (const name of [
      'exec-mcp-tool-call.rollout', 'exec-shell-command.rollout', 'failed-turn.rollout', 'tui-interrupted.rollout',
      'tui-kill-resume.rollout', 'tui-killed-mid-turn.rollout', 'tui-cal-paste-resume-500-shell-killed.rollout',
      'tui-mcp-tool-call.rollout', 'exec-resume-tools-http500.rollout',
    ]) {
      const unknown = records(name).filter((r) => classifyRecord(r).kind === 'unknown');
      expect(unknown, name).toEqual([]);
    }
  });

  it('a normal turn completes on task_complete for its turn_id, answer = last_agent_message', () => {
    const o = observe('tui-kill-resume.rollout', 'remember codeword KIWI');
    const end = ended(o);
    expect(end).toMatchObject({ status: 'completed', turnKey: '01a22a70-1692-7483-86dc-8f1507526442', answer: 'Noted. I will remember the codeword KIWI.', error: null });
    expect(o.tools).toEqual([]);
  });

  it('after a kill and native resume, the new turn is matched by its own turn_id', () => {
    const o = observe('tui-kill-resume.rollout', 'what was the codeword?');
    expect(ended(o)).toMatchObject({ status: 'completed', turnKey: '01a22a70-1e04-7061-9846-c8cb813ee2e6', answer: 'The codeword was KIWI.' });
  });

  it('task_complete with error is a failed turn with Codex text and no answer', () => {
    const o = observe('failed-turn.rollout', 'please FAILEVENT now');
    expect(ended(o)).toMatchObject({ status: 'failed', answer: null, error: 'stream disconnected before completion: mock response.failed' });
    const http = observe('tui-cal-paste-resume-500-shell-killed.rollout', 'This fails [[cal:http=500]]');
    expect(ended(http)).toMatchObject({ status: 'failed', answer: null, error: 'We’re currently experiencing high demand, which may cause temporary errors.' });
  });

  it('turn_aborted is an interrupted turn', () => {
    const o = observe('tui-interrupted.rollout', 'WAIT for ctrl-c test');
    expect(ended(o)).toMatchObject({ status: 'interrupted', turnKey: '01a22a6f-ce01-7ec0-899f-a8f8f7cc902d' });
    expect(ended(o).error).toMatch(/interrupted/);
  });

  it('a turn killed mid-way stays running; a newer task_started closes it as lost', () => {
    const o = observe('tui-killed-mid-turn.rollout', 'mock is down');
    expect(o.observation.phase).toBe('running');
    const lost = observe('tui-cal-paste-resume-500-shell-killed.rollout', 'slow one [[cal:delay=8000]]');
    expect(ended(lost)).toMatchObject({ status: 'lost', answer: null });
    // …and the turn after the resume completes normally.
    const next = new CodexTurnObserver('What was the codeword?');
    const all = records('tui-cal-paste-resume-500-shell-killed.rollout');
    const resumedAt = all.findIndex((r) => r.payload?.item?.content?.[0]?.text === 'slow one [[cal:delay=8000]]');
    for (const r of all.slice(resumedAt + 1)) next.feed(r);
    expect(ended(next)).toMatchObject({ status: 'completed', answer: 'The codeword was KIWI.' });
  });

  it('a shell command is recorded as the script the model asked for, with output and status', () => {
    const o = observe('exec-shell-command.rollout', 'please RUNSHELL now');
    expect(ended(o).status).toBe('completed');
    expect(o.tools).toEqual([{ kind: 'shell', name: 'echo hello-from-shell', output: 'hello-from-shell\n', status: 'completed' }]);
    const tui = observe('tui-cal-paste-resume-500-shell-killed.rollout', 'run it [[cal:shell=echo hello-from-shell]]');
    expect(ended(tui)).toMatchObject({ status: 'completed', answer: 'Tool finished: hello-from-shell' });
    expect(tui.tools).toEqual([{ kind: 'shell', name: 'echo hello-from-shell', output: 'hello-from-shell\n', status: 'completed' }]);
  });

  it('an MCP call is recorded as the inner call (server, tool, arguments, result)', () => {
    const o = observe('exec-mcp-tool-call.rollout', 'please RUNMCP now');
    expect(ended(o).status).toBe('completed');
    expect(o.tools).toEqual([{ kind: 'mcp', server: 'probe', name: 'echo', input: { text: 'ping-from-model' }, output: 'echo: ping-from-model', status: 'completed' }]);
    const tui = observe('tui-mcp-tool-call.rollout', 'call [[cal:mcp=probe.echo {"text":"ping"}]]');
    expect(ended(tui)).toMatchObject({ status: 'completed', answer: 'Tool finished: echo: ping' });
    expect(tui.tools).toEqual([{ kind: 'mcp', server: 'probe', name: 'echo', input: { text: 'ping' }, output: 'echo: ping', status: 'completed' }]);
  });

  it('the answer is only the final message of the turn', () => {
    const o = observe('exec-resume-tools-http500.rollout', 'run [[cal:shell=echo hello-from-shell]]');
    expect(ended(o).answer).toBe('Tool finished: hello-from-shell');
  });

  it('a message that is not in the rollout is never matched; Codex context blocks are not user text', () => {
    const o = observe('tui-kill-resume.rollout', 'a message nobody sent');
    expect(o.observation.phase).toBe('waiting');
    const env = observe('tui-kill-resume.rollout', '<environment_context>');
    expect(env.observation.phase).toBe('waiting');
  });

  it('unknown record kinds are skipped and counted, never fatal', () => {
    const all = records('tui-kill-resume.rollout');
    const o = new CodexTurnObserver('remember codeword KIWI');
    o.feed({ timestamp: 'x', ordinal: 99, type: 'brand_new_record', payload: {} });
    o.feed({ type: 'event_msg', payload: { type: 'brand_new_event' } });
    o.feed('not even an object');
    o.feed({ type: 'event_msg', payload: { type: 'task_complete' } }); // a known kind whose shape drifted
    for (const r of all) o.feed(r);
    expect(o.unknownRecords).toBe(4);
    expect(ended(o).status).toBe('completed');
  });

  it('completions of other turns never end ours', () => {
    const all = records('tui-kill-resume.rollout');
    const o = new CodexTurnObserver('what was the codeword?');
    for (const r of all.filter((r) => r.payload?.type !== 'task_complete' || r.payload.turn_id !== '01a22a70-1e04-7061-9846-c8cb813ee2e6')) o.feed(r);
    expect(o.observation.phase).toBe('running');
    expect(o.partialAnswer).toBe('The codeword was KIWI.');
  });

  it('shell argv is shown as its script', () => {
    expect(shellCommandText(['/bin/bash', '-lc', 'echo hi && ls'])).toBe('echo hi && ls');
    expect(shellCommandText(['git', 'status'])).toBe('git status');
  });
});

describe('codex exec --json stream (recorded 0.169.0)', () => {
  it('a turn: thread id, warning items ignored, answer from the last agent_message', () => {
    const s = parseExecStream(fixtureText('codex', 'exec-json-remember.events'));
    expect(s).toMatchObject({ threadId: '01a22afc-42cc-7112-8c95-c73ff4591f42', ended: 'completed', answer: 'OK, I will remember the codeword ZEBRA.', tools: [], unknownEvents: 0 });
    const r = parseExecStream(fixtureText('codex', 'exec-json-resume-recall.events'));
    expect(r).toMatchObject({ threadId: '01a22afc-42cc-7112-8c95-c73ff4591f42', ended: 'completed', answer: 'The codeword was ZEBRA.' });
  });

  it('shell and MCP items become tool activity', () => {
    expect(parseExecStream(fixtureText('codex', 'exec-json-shell.events')).tools).toEqual([{ kind: 'shell', name: 'echo hello-from-shell', output: 'hello-from-shell\n', status: 'completed' }]);
    expect(parseExecStream(fixtureText('codex', 'exec-json-mcp.events')).tools).toEqual([
      { kind: 'mcp', server: 'probe', name: 'echo', input: { text: 'ping-from-model' }, output: 'echo: ping-from-model', status: 'completed' },
    ]);
  });

  it('turn.failed carries Codex text', () => {
    const s = parseExecStream(fixtureText('codex', 'exec-json-http500.events'));
    expect(s).toMatchObject({ ended: 'failed', answer: null, error: 'We’re currently experiencing high demand, which may cause temporary errors.' });
  });

  it('unknown events and junk lines are counted, never fatal', () => {
    const s = parseExecStream(`${fixtureText('codex', 'exec-json-remember.events')}\n{"type":"thread.brand_new"}\nnot json\n`);
    expect(s.unknownEvents).toBe(2);
    expect(s.ended).toBe('completed');
  });

  it("Codex's own error line is picked out of stderr, not a warning or a backtrace", () => {
    const stderr = [
      'WARNING: proceeding, even though we could not create PATH aliases: Refusing to create helper binaries under temporary dir "/tmp"',
      'Reading additional input from stdin...',
      'Error: thread/resume: thread/resume failed: no rollout found for thread id 01a22a00-0000-7000-8000-000000000000 (code -32600)',
      'Stack backtrace:',
      '   0: <unknown>',
      '   1: <unknown>',
    ].join('\n');
    expect(lastErrorLine(stderr)).toBe('Error: thread/resume: thread/resume failed: no rollout found for thread id 01a22a00-0000-7000-8000-000000000000 (code -32600)');
    expect(lastErrorLine('something odd\n')).toBe('something odd');
  });

  it('exec shell command strings are unwrapped like the rollout argv', () => {
    expect(unwrapShell("/bin/bash -lc 'echo hello-from-shell'")).toBe('echo hello-from-shell');
    expect(unwrapShell(`/bin/bash -lc 'echo '"'"'quoted'"'"' && ls'`)).toBe("echo 'quoted' && ls");
    expect(unwrapShell('/bin/bash -lc ls')).toBe('ls');
    expect(unwrapShell('/bin/bash -lc two words')).toBe('/bin/bash -lc two words');
    expect(unwrapShell('ls -la')).toBe('ls -la');
  });
});
