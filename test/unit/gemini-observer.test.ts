import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { findTranscript, geminiAdapter, sessionFiles } from '../../src/adapters/gemini/index.js';
import { prepareMessage } from '../../src/engine/message.js';
import { parseSettings } from '../../src/adapters/gemini/home.js';
import { GeminiTurnObserver, classifyRecord, normaliseForMatch, shellOutput, toolFromCall } from '../../src/adapters/gemini/transcript.js';
import { ended, feedFixture, fixtureRecords, fixtureText } from '../support/fixtures.js';

/** Observer tests over session files recorded from the real Gemini CLI 0.61.0. */
const FIXTURES = [
  'interactive-multi-turn.session',
  'resumed.session',
  'tool-call.session',
  'tui-stream-500-cancel-400.session',
  'cal-start-paste-resume.session',
  'cal-slow-shell-tool.session',
  'tui-cancelled-tool-500-stop.session',
  'tui-lost-shell-output.session',
  'tui-failed-write-file.session',
  'tui-hook-stopped-write-file.session',
  'headless-hook-stopped-write-file.session',
  'tui-cancelled-tool-no-note.session',
  'tui-stopped-tool-no-display.session',
];

const records = (name: string) => fixtureRecords('gemini', name);
const observe = (name: string, message: string, notBefore?: Date) => feedFixture(new GeminiTurnObserver(message, notBefore), 'gemini', name);

describe('Gemini session-file observer (recorded 0.61.0 sessions)', () => {
  const WRITE_OK = 'Write ok [[cal:mcp=x.write_file {"file_path":"/work/wt/h44g/.tmp/gem/w/ok.txt","content":"hi"}]]';
  const WRITE_OK3 = 'Write ok3 [[cal:mcp=x.write_file {"file_path":"/work/wt/h44g/.tmp/gem/w/ok3.txt","content":"hi"}]]';
  const STOPPED = 'Agent execution stopped by hook: write refused by hook';

  it('a session that ends on a failed write_file with no reply (a hook stopped the agent, headless) ends failed with the CLI\'s reason', () => {
    const o = ended(observe('headless-hook-stopped-write-file.session', WRITE_OK3));
    expect(o).toMatchObject({ status: 'failed', answer: null, error: STOPPED });
  });

  it('in the TUI the stopped write_file ends the turn failed at its own record, before the "Agent execution stopped" note', () => {
    const all = records('tui-hook-stopped-write-file.session');
    const note = all.findIndex((r) => r.type === 'info');
    expect(all[note].content).toBe('Agent execution stopped: write refused by hook');
    const o = new GeminiTurnObserver(WRITE_OK);
    for (const r of all.slice(0, note)) o.feed(r);
    expect(ended(o)).toMatchObject({ status: 'failed', answer: null, error: STOPPED });
    expect(o.tools).toMatchObject([{ kind: 'tool', name: 'write_file', status: 'error', output: STOPPED }]);
    // The note alone (a stop that is not a tool's: a model hook) ends it the same way.
    const noteOnly = new GeminiTurnObserver(WRITE_OK);
    for (const r of all.filter((r) => !(r.type === 'gemini' && r.toolCalls))) noteOnly.feed(r);
    expect(ended(noteOnly)).toMatchObject({ status: 'failed', answer: null, error: 'Agent execution stopped: write refused by hook' });
  });

  it('a reply whose tool calls were all cancelled ends the turn interrupted at its own record, with no "Request cancelled." note after it (lost on 91258d3)', () => {
    // The held-out corpus's shape: the denied call (status cancelled), then the next prompt, and
    // no note in between (a release or path that records none).
    const message = 'run it [[cal:shell=touch made-by-tool]]';
    const o = observe('tui-cancelled-tool-no-note.session', message);
    expect(ended(o)).toMatchObject({ status: 'interrupted', answer: null });
    expect(o.tools).toEqual([expect.objectContaining({ status: 'cancelled' })]);
    // One call cancelled beside one that ran is no end: the results go back to the model.
    const all = records('tui-cancelled-tool-no-note.session');
    const reply = all.findLastIndex((r) => r.type === 'gemini');
    const mixed = structuredClone(all[reply]);
    mixed.toolCalls.push({ ...mixed.toolCalls[0], id: 'other', status: 'success' });
    const running = new GeminiTurnObserver(message);
    for (const r of [...all.slice(0, reply), mixed]) running.feed(r);
    expect(running.observation.phase).toBe('running');
  });

  it('a session ending on a tool call that stopped the agent, recorded with no display text (only the error it sent back), ends failed (ran forever on 91258d3)', () => {
    const o = ended(observe('tui-stopped-tool-no-display.session', 'run it [[cal:shell=touch made-by-tool]]'));
    expect(o).toMatchObject({ status: 'failed', answer: null, error: 'Agent execution stopped by hook: release freeze until Monday' });
  });

  it('a write_file that fails for itself goes back to the model, and the turn runs until the reply to it', () => {
    const message = 'Write it [[cal:mcp=x.write_file {"file_path":"/work/wt/h44g/.tmp/gem/w/afile/sub.txt","content":"hi"}]]';
    const all = records('tui-failed-write-file.session');
    const failedCall = all.findIndex((r) => r.type === 'gemini' && r.toolCalls?.[0]?.status === 'error');
    const o = new GeminiTurnObserver(message);
    for (const r of all.slice(0, failedCall + 1)) o.feed(r);
    expect(o.observation.phase).toBe('running');
    const done = ended(observe('tui-failed-write-file.session', message));
    expect(done).toMatchObject({ status: 'completed', error: null });
    expect(done.answer).toMatch(/^Tool failed: Error checking existing file .*ENOTDIR/);
  });

  it('every record of every recorded session has a known kind', () => {
    for (const name of FIXTURES) {
      const unknown = records(name).filter((r) => classifyRecord(r).kind === 'unknown');
      expect(unknown, name).toEqual([]);
    }
  });

  it('a plain turn completes on the reply record, with its text and the user record id as key', () => {
    const o = ended(observe('cal-start-paste-resume.session', 'What was the codeword?'));
    expect(o).toEqual({ phase: 'ended', status: 'completed', turnKey: 'ff243174-2581-4934-8f88-2a9cf839bcb7', answer: 'The codeword was KIWI.', error: null });
  });

  it('the first turn of a session (delivered with -i) and the first turn after a resume', () => {
    expect(ended(observe('cal-start-paste-resume.session', 'Remember the codeword KIWI.')).answer).toBe('OK, I will remember the codeword KIWI.');
    const resumed = ended(observe('cal-start-paste-resume.session', 'What was the codeword, again?'));
    expect(resumed).toMatchObject({ status: 'completed', turnKey: '710ace6c-b801-40be-8082-f4a60dfa9027', answer: 'The codeword was KIWI.' });
  });

  it('a message not yet recorded waits; recorded but unanswered runs', () => {
    expect(observe('cal-start-paste-resume.session', 'never sent').observation).toEqual({ phase: 'waiting' });
    const all = records('cal-start-paste-resume.session');
    const o = new GeminiTurnObserver('What was the codeword?');
    for (const r of all.slice(0, 7)) o.feed(r);
    expect(o.observation).toEqual({ phase: 'running', turnKey: 'ff243174-2581-4934-8f88-2a9cf839bcb7' });
  });

  it('records older than the send are never taken for our message (a resend of the same text)', () => {
    const o = observe('cal-start-paste-resume.session', 'What was the codeword?', new Date('2026-11-30T06:57:20.000Z'));
    expect(o.observation).toEqual({ phase: 'waiting' });
  });

  it('a tool turn: the empty reply rewritten with toolCalls is not the end; the answer after the tool result is', () => {
    const o = observe('tool-call.session', 'please TOOLCALL list dir');
    const obs = ended(o);
    expect(obs.status).toBe('completed');
    expect(obs.answer).toMatch(/^MOCK reply; history=3/);
    expect(o.tools).toHaveLength(1);
    expect(o.tools[0]).toMatchObject({ kind: 'tool', name: 'list_directory', status: 'completed' });
    expect(o.tools[0]?.output).toBeTruthy();
  });

  it('an HTTP 400 the CLI gives up on is a failed turn with the error text and no answer', () => {
    const obs = ended(observe('tui-stream-500-cancel-400.session', 'This one fails [[cal:http=400]]'));
    expect(obs.status).toBe('failed');
    expect(obs.answer).toBeNull();
    expect(obs.error).toContain('Mock error 400');
  });

  it('Escape on a request the TUI keeps retrying (HTTP 500) is an interrupted turn', () => {
    expect(ended(observe('tui-stream-500-cancel-400.session', 'This one fails [[cal:http=500]]')).status).toBe('interrupted');
    expect(ended(observe('interactive-multi-turn.session', 'now FAIL500 please')).status).toBe('interrupted');
  });

  it('a persistent 500 answered "Stop" (cal’s stall keys): the CLI’s error record fails the turn; until then it awaits the model', () => {
    const message = 'fail now [[cal:http=500]]';
    const obs = ended(observe('tui-cancelled-tool-500-stop.session', message));
    expect(obs).toMatchObject({ status: 'failed', answer: null });
    expect(obs.error).toMatch(/^\[API Error: .*"code":500/);
    const all = records('tui-cancelled-tool-500-stop.session');
    const error = all.findIndex((r) => (r as { type?: string }).type === 'error');
    const o = new GeminiTurnObserver(message);
    for (const r of all.slice(0, error)) o.feed(r);
    expect(o.observation.phase).toBe('running');
    expect(o.awaitingModel).toBe(true);
  });

  it('a tool call denied at its confirmation settles the turn as interrupted, the call listed as cancelled; no stall keys while it asks', () => {
    const message = 'run it [[cal:shell=touch made-by-tool]]';
    const o = observe('tui-cancelled-tool-500-stop.session', message);
    expect(ended(o).status).toBe('interrupted');
    expect(o.tools).toEqual([expect.objectContaining({ kind: 'shell', name: 'touch made-by-tool', status: 'cancelled', output: expect.stringMatching(/denied/) })]);
    // While the confirmation is up the session file holds the reply (empty text, tools to come).
    const all = records('tui-cancelled-tool-500-stop.session');
    const reply = all.findIndex((r) => (r as { type?: string }).type === 'gemini');
    const asking = new GeminiTurnObserver(message);
    for (const r of all.slice(0, reply + 1)) asking.feed(r);
    expect(asking.observation.phase).toBe('running');
    expect(asking.awaitingModel).toBe(false);
  });

  it('a slowly streamed answer is recorded once, whole', () => {
    const obs = ended(observe('tui-stream-500-cancel-400.session', 'Stream slowly'));
    expect(obs.answer).toBe('alpha bravo charlie delta echo foxtrot golf');
  });

  it('a turn killed before its reply ends as lost at the relaunch header (never answered by the next turn)', () => {
    const obs = ended(observe('resumed.session', 'SLOW turn then kill'));
    expect(obs.status).toBe('lost');
    expect(obs.answer).toBeNull();
    // The next prompt after the kill gets its own answer.
    expect(ended(observe('resumed.session', 'after mid-turn kill')).status).toBe('completed');
  });

  it('a newer human prompt closes a dangling turn as lost', () => {
    const o = new GeminiTurnObserver('first');
    o.feed({ id: 'a', timestamp: '2026-11-30T00:00:00Z', type: 'user', content: [{ text: 'first' }] });
    o.feed({ id: 'b', timestamp: '2026-11-30T00:00:01Z', type: 'user', content: [{ text: 'second' }] });
    expect(ended(o).status).toBe('lost');
  });

  it('a $rewindTo of our message is an interrupted turn; unknown shapes are counted, never fatal', () => {
    const o = new GeminiTurnObserver('hello');
    o.feed({ some: 'thing' });
    o.feed({ id: 'a', type: 'user', content: [{ text: 'hello' }] });
    o.feed({ $rewindTo: 'a' });
    expect(ended(o).status).toBe('interrupted');
    expect(o.unknownRecords).toBe(1);
  });

  it('a shell tool turn (the tool runs 3 s): the command, its own output, and the answer after the result', () => {
    const o = observe('cal-slow-shell-tool.session', 'Run the slow tool [[cal:shell=sleep 3 && echo slowdone]]');
    expect(ended(o)).toMatchObject({ status: 'completed', answer: 'Tool finished: slowdone' });
    expect(o.tools).toEqual([
      { kind: 'shell', name: 'sleep 3 && echo slowdone', input: { command: 'sleep 3 && echo slowdone', description: 'Run: sleep 3 && echo slowdone' }, output: 'slowdone', status: 'completed' },
    ]);
    // While the tool runs, the turn has only the empty reply record: not ended.
    const partial = new GeminiTurnObserver('Run the slow tool [[cal:shell=sleep 3 && echo slowdone]]');
    const all = records('cal-slow-shell-tool.session');
    const emptyReply = all.findIndex((r) => (r as { type?: string; content?: unknown }).type === 'gemini' && (r as { content?: unknown }).content === '');
    for (const r of all.slice(0, emptyReply + 2)) partial.feed(r);
    expect(partial.observation.phase).toBe('running');
  });

  it('a shell tool whose output the CLI itself lost (its pty, under load): empty, as the CLI sent it to the model', () => {
    // Recorded in a certification run (three scenarios at once): `pwd` ran and exited 0, but
    // Gemini sent the model `Output: (empty)` and showed only its cursor line.
    const o = observe('tui-lost-shell-output.session', 'Print the working directory [[cal:shell=pwd]]');
    expect(ended(o)).toMatchObject({ status: 'completed', answer: 'Tool finished: (empty)' });
    expect(o.tools).toEqual([{ kind: 'shell', name: 'pwd', input: { command: 'pwd', description: 'Run: pwd' }, output: '', status: 'completed' }]);
  });

  it('shell output is the command output inside the untrusted_context wrapper', () => {
    expect(shellOutput('<untrusted_context>\nOutput: /a/b\nProcess Group PGID: 1\n</untrusted_context>')).toBe('/a/b');
    expect(shellOutput('<untrusted_context>\nOutput: one\ntwo\nError: (none)\nExit Code: 1\n</untrusted_context>')).toBe('one\ntwo');
    expect(shellOutput('Output: (empty)\nProcess Group PGID: 2')).toBe('');
    expect(shellOutput('something else')).toBe('something else');
  });

  it('tool calls map to shell and MCP activity', () => {
    expect(toolFromCall({ id: '1', name: 'run_shell_command', args: { command: 'pwd' }, status: 'success', result: [{ functionResponse: { response: { output: 'Output: /x' } } }] })).toEqual({
      kind: 'shell',
      name: 'pwd',
      input: { command: 'pwd' },
      output: '/x',
      status: 'completed',
    });
    expect(toolFromCall({ id: '2', name: 'mcp_calprobe_echo', args: { text: 'hi' } })).toMatchObject({ kind: 'mcp', server: 'calprobe', name: 'echo' });
  });
});

/** What cal types into a Gemini pane for a message (the adapter's declared guard, applied by the engine). */
const typed = (m: string) => prepareMessage(geminiAdapter, 'tmux', m).typed;

describe('Gemini adapter', () => {
  const config = { cwd: '/work/p', model: null, systemPrompt: null, mcpConfigPath: null, toolPolicy: 'default' };

  it('guards a leading ! so it stays text; refuses a leading / (a slash command however it is guarded)', () => {
    expect(() => typed('/help')).toThrow(/slash command/);
    expect(() => typed('  /about x')).toThrow(/slash command/);
    expect(typed('// a comment')).toBe('// a comment');
    expect(typed('/* c */')).toBe('/* c */');
    expect(typed('a /b')).toBe('a /b');
    expect(typed('!ls')).toBe(' !ls');
    expect(typed('plain')).toBe('plain');
  });

  it('parses settings with comments', () => {
    expect(parseSettings('// c\n{"a": "http://x" /* y */}')).toEqual({ a: 'http://x' });
  });

  it('finds the real transcript of an id among stray files of the same id prefix', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'cal-gemini-unit-'));
    try {
      const id = 'c849d745-d7ce-41ff-bcd7-afc40d05b452';
      const chats = path.join(dir, 'tmp', 'proj', 'chats');
      await fs.mkdir(chats, { recursive: true });
      const real = fixtureText('gemini', 'cal-start-paste-resume.session');
      const lines = real.split('\n');
      await fs.writeFile(path.join(chats, 'session-2026-11-30T06-57-c849d745.jsonl'), real);
      // A stray from a resume in a later minute: header and context only.
      await fs.writeFile(path.join(chats, 'session-2026-11-30T06-58-c849d745.jsonl'), `${lines.slice(0, 2).join('\n')}\n`);
      await fs.writeFile(path.join(chats, 'session-2026-11-30T06-59-deadbeef.jsonl'), real);
      expect(await sessionFiles(dir, id)).toHaveLength(2);
      expect(await findTranscript(dir, id, 'What was the codeword, again?', null)).toBe(path.join(chats, 'session-2026-11-30T06-57-c849d745.jsonl'));
      expect(await findTranscript(dir, id, 'not there', null)).toBeNull();
      const bound = await geminiAdapter.bindTranscript({ env: { GEMINI_CLI_HOME: path.dirname(dir) }, config, sessionId: id, message: 'x', sentAt: new Date() });
      expect(bound).toBeNull();
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});

describe('matching a message to its Gemini record', () => {
  it('drops invisible format characters on both sides (a message starting with U+200B reached the model without it on 0.61.0)', () => {
    expect(normaliseForMatch('\u200b!touch x')).toBe(normaliseForMatch('!touch x'));
    expect(normaliseForMatch('mid\ufeffdle \u2060word\r\n')).toBe('middle word');
  });

  it("refuses a '/' behind blanks or invisible characters: Gemini strips them and runs the slash command", () => {
    for (const m of ['/about', ' /about', '\u200b/about', '\ufeff\t/about']) expect(() => typed(m)).toThrow(/slash command/);
    for (const m of ['// comment', '/* c */', 'see /about', '\u200b!touch x']) expect(typed(m)).toBe(m);
  });
});
