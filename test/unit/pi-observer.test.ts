import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { chooseSessionFile, findSessionFile, piAgentDir, piProjectFolder, scriptedPiEnv } from '../../src/adapters/pi/home.js';
import { piAdapter } from '../../src/adapters/pi/index.js';
import { prepareMessage } from '../../src/engine/message.js';
import { classifyRecord, PiTurnObserver } from '../../src/adapters/pi/session.js';
import { ended, feedFixture, fixtureRecords } from '../support/fixtures.js';

/** Observer tests over session files recorded from the real Pi 0.73.1. */
const records = (name: string) => fixtureRecords('pi', name);
const observe = (name: string, message: string, notBefore?: Date) => feedFixture(new PiTurnObserver(message, notBefore), 'pi', name);

const NAMES = ['interactive-resume-with-errors.session', 'print-resume.session', 'tool-call.session'];

describe('Pi session observer (recorded 0.73.1 session files)', () => {
  it('every record of every recorded session has a known kind', () => {
    for (const name of NAMES) {
      expect(records(name).filter((r) => classifyRecord(r).kind === 'unknown'), name).toEqual([]);
    }
  });

  it('a plain turn completes with the assistant text, keyed by the user entry id', () => {
    const o = observe('print-resume.session', 'what was the codeword?');
    expect(ended(o)).toEqual({
      phase: 'ended',
      status: 'completed',
      turnKey: '21a25b5f',
      answer: 'MOCK reply; history=4; users=2; dialect=openai:mock-model; recalled=zebra; last="what was the codeword?"',
      error: null,
    });
    expect(o.tools).toEqual([]);
    expect(o.unknownRecords).toBe(0);
  });

  it('a pasted multi-line message with a tab matches (the TUI stores the tab as four spaces)', () => {
    const o = observe('interactive-resume-with-errors.session', 'pi pasted line one?\r\npi pasted line two\twith tab');
    expect(ended(o)).toMatchObject({ status: 'completed', turnKey: '08dbcdc7' });
  });

  it('stopReason error ends the turn failed with Pi\'s errorMessage and no answer, at the first error record', () => {
    const o = observe('interactive-resume-with-errors.session', 'pi interactive FAIL500');
    expect(ended(o)).toEqual({ phase: 'ended', status: 'failed', turnKey: '698e6d0a', answer: null, error: '500 mock internal error' });
  });

  it('the turn after a failed one (two user messages in a row in the history) completes', () => {
    const o = observe('interactive-resume-with-errors.session', 'after resume: what was the codeword?');
    expect(ended(o)).toMatchObject({ status: 'completed', turnKey: 'eaa356c4' });
    expect((ended(o).answer ?? '')).toContain('recalled=otter');
  });

  it('a tool turn lists the tool with input and output and answers with the text after the result', () => {
    const o = observe('tool-call.session', 'please TOOLCALL read note');
    expect(ended(o)).toMatchObject({ status: 'completed', turnKey: '4c7393dc', answer: 'MOCK reply; history=4; users=1; dialect=openai:mock-model; last="please TOOLCALL read note"' });
    expect(o.tools).toEqual([{ kind: 'tool', name: 'read', input: { path: 'note.txt' }, output: 'note content 123\n', status: 'completed' }]);
  });

  it('toolUse is not the end: the turn is still running after the tool call and its result', () => {
    const o = new PiTurnObserver('please TOOLCALL read note');
    for (const r of records('tool-call.session').slice(0, 6)) o.feed(r);
    expect(o.observation).toEqual({ phase: 'running', turnKey: '4c7393dc' });
    expect(o.tools[0]).toMatchObject({ name: 'read', output: 'note content 123\n' });
  });

  it('bash calls are shell activity named by their command; mcp__server__tool calls are MCP activity', () => {
    const base = { type: 'message', parentId: 'x', timestamp: '2026-11-30T04:00:00.000Z' };
    const o = new PiTurnObserver('run both');
    o.feed({ ...base, id: 'u1', message: { role: 'user', content: [{ type: 'text', text: 'run both' }] } });
    o.feed({ ...base, id: 'a1', message: { role: 'assistant', content: [{ type: 'toolCall', id: 'c1', name: 'bash', arguments: { command: 'echo hi' } }], stopReason: 'toolUse' } });
    o.feed({ ...base, id: 't1', message: { role: 'toolResult', toolCallId: 'c1', toolName: 'bash', content: [{ type: 'text', text: 'hi\n' }], isError: false } });
    o.feed({ ...base, id: 'a2', message: { role: 'assistant', content: [{ type: 'toolCall', id: 'c2', name: 'mcp__probe__echo', arguments: { text: 'x' } }], stopReason: 'toolUse' } });
    o.feed({ ...base, id: 't2', message: { role: 'toolResult', toolCallId: 'c2', toolName: 'mcp__probe__echo', content: [{ type: 'text', text: 'boom' }], isError: true } });
    o.feed({ ...base, id: 'a3', message: { role: 'assistant', content: [{ type: 'text', text: 'done' }], stopReason: 'stop' } });
    expect(ended(o)).toMatchObject({ status: 'completed', answer: 'done', turnKey: 'u1' });
    expect(o.tools).toEqual([
      { kind: 'shell', name: 'echo hi', input: { command: 'echo hi' }, output: 'hi\n', status: 'completed' },
      { kind: 'mcp', server: 'probe', name: 'echo', input: { text: 'x' }, output: 'boom', status: 'error' },
    ]);
  });

  it('stopReason aborted (Esc) is interrupted with the partial text; a newer user message before any end is lost', () => {
    const base = { type: 'message', parentId: 'x', timestamp: '2026-11-30T04:00:00.000Z' };
    const a = new PiTurnObserver('long one');
    a.feed({ ...base, id: 'u1', message: { role: 'user', content: [{ type: 'text', text: 'long one' }] } });
    expect(a.observation.phase).toBe('running');
    a.feed({ ...base, id: 'a1', message: { role: 'assistant', content: [{ type: 'text', text: 'part' }], stopReason: 'aborted', errorMessage: 'Operation aborted' } });
    expect(ended(a)).toEqual({ phase: 'ended', status: 'interrupted', turnKey: 'u1', answer: 'part', error: 'Operation aborted' });

    const l = new PiTurnObserver('killed one');
    l.feed({ ...base, id: 'u1', message: { role: 'user', content: [{ type: 'text', text: 'killed one' }] } });
    l.feed({ ...base, id: 'u2', message: { role: 'user', content: [{ type: 'text', text: 'next one' }] } });
    expect(ended(l)).toMatchObject({ status: 'lost', answer: null, turnKey: 'u1' });
  });

  it('records older than notBefore are never taken for the message (a resend of the same text)', () => {
    const o = observe('print-resume.session', 'what was the codeword?', new Date('2026-11-30T03:08:13.000Z'));
    expect(o.observation).toEqual({ phase: 'waiting' });
  });

  it('garbage and unknown entry types are counted, never fatal', () => {
    const o = new PiTurnObserver('x');
    o.feed({ type: 'something_new' });
    o.feed('not an object');
    o.feed({ type: 'message', id: 'a', message: { role: 'assistant', content: 'not an array' } });
    expect(o.unknownRecords).toBe(3);
    expect(o.observation.phase).toBe('waiting');
  });
});

describe('Pi adapter: session files, launch and the scripted agent dir', () => {
  it('chooses the session file in the folder Pi uses for the working directory', () => {
    const env = { HOME: '/home/u' };
    expect(piAgentDir(env)).toBe('/home/u/.pi/agent');
    expect(piAgentDir({ HOME: '/home/u', PI_CODING_AGENT_DIR: '~/pi' })).toBe('/home/u/pi');
    expect(piProjectFolder('/tmp/a/b')).toBe('--tmp-a-b--');
    expect(chooseSessionFile(env, '/tmp/a/b', 'abc', new Date('2026-11-30T03:08:00.999Z'))).toBe('/home/u/.pi/agent/sessions/--tmp-a-b--/2026-11-30T03-08-00-999Z_abc.jsonl');
    expect(chooseSessionFile({ ...env, PI_CODING_AGENT_SESSION_DIR: '/s' }, '/tmp/a/b', 'abc', new Date('2026-11-30T03:08:00.999Z'))).toBe('/s/2026-11-30T03-08-00-999Z_abc.jsonl');
  });

  const cli = { path: '/x/pi', realPath: '/x/cli.js', version: '0.73.1' };
  const config = { cwd: '/tmp/w', model: null, systemPrompt: null, mcpConfigPath: null, toolPolicy: 'default' };

  it('a fresh launch carries the session file and the message in argv; guarded leading - and @', () => {
    const plan = piAdapter.launch({ cli, env: { HOME: '/h' }, config, mode: 'fresh', sessionId: 'cal-id', message: prepareMessage(piAdapter, 'tmux', '-v @file').typed });
    expect(plan.argv.slice(0, 2)).toEqual(['/x/cli.js', '--session']);
    expect(plan.argv[2]).toMatch(/^\/h\/\.pi\/agent\/sessions\/--tmp-w--\/.*_cal-id\.jsonl$/);
    expect(plan.argv.at(-1)).toBe(' -v @file');
    expect(plan).toMatchObject({ deliversMessage: true, cwd: '/tmp/w', sessionId: plan.argv[2] });
    // A second fresh launch of a session that never bound keeps its file.
    const again = piAdapter.launch({ cli, env: { HOME: '/h' }, config, mode: 'fresh', sessionId: plan.sessionId, message: 'hi' });
    expect(again.argv[2]).toBe(plan.argv[2]);
  });

  it('system prompt, model and MCP config (through the bridge extension) reach the launch', () => {
    const plan = piAdapter.launch({ cli, env: { HOME: '/h', CAL_PI_MCP_CONFIG: '/stale' }, config: { ...config, model: 'm', systemPrompt: 'be brief', mcpConfigPath: '/c/mcp.json' }, mode: 'fresh', sessionId: 'i', message: 'hi' });
    expect(plan.argv).toEqual(expect.arrayContaining(['--model', 'm', '--append-system-prompt', 'be brief', '--extension']));
    expect(plan.argv[plan.argv.indexOf('--extension') + 1]).toMatch(/mcp-extension\.js$/);
    expect(plan.env.CAL_PI_MCP_CONFIG).toBe('/c/mcp.json');
    expect(piAdapter.launch({ cli, env: { HOME: '/h', CAL_PI_MCP_CONFIG: '/stale' }, config, mode: 'fresh', sessionId: 'i', message: 'hi' }).env.CAL_PI_MCP_CONFIG).toBeUndefined();
  });

  it('resume finds the file by the header id; a missing file is resume_unavailable, never a fresh start', () => {
    const home = mkdtempSync(path.join(os.tmpdir(), 'cal-pi-unit-'));
    try {
      const env = { HOME: home };
      const file = chooseSessionFile(env, '/tmp/w', 'cal-id');
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(path.join(path.dirname(file), 'other.jsonl'), '{"type":"session","version":3,"id":"other","cwd":"/tmp/w"}\n');
      writeFileSync(file, '{"type":"session","version":3,"id":"01a22a6c-7666","cwd":"/tmp/w"}\n');
      expect(findSessionFile(env, '/tmp/w', '01a22a6c-7666')).toBe(file);
      const plan = piAdapter.launch({ cli, env, config, mode: 'resume', sessionId: '01a22a6c-7666', message: 'again' });
      expect(plan.argv.slice(1, 3)).toEqual(['--session', file]);
      rmSync(file);
      expect(() => piAdapter.launch({ cli, env, config, mode: 'resume', sessionId: '01a22a6c-7666', message: 'again' })).toThrow(expect.objectContaining({ kind: 'resume_unavailable' }));
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('the scripted agent dir has the mock provider at <url>/v1, retries off, offline', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cal-pi-unit-'));
    try {
      const env = await scriptedPiEnv(dir, 'http://127.0.0.1:9/', { HOME: '/h', PI_CODING_AGENT_SESSION_DIR: '/elsewhere' });
      expect(env).toMatchObject({ HOME: '/h', PI_CODING_AGENT_DIR: path.join(dir, 'pi-agent'), PI_OFFLINE: '1' });
      expect(env.PI_CODING_AGENT_SESSION_DIR).toBeUndefined();
      const models = JSON.parse(readFileSync(path.join(dir, 'pi-agent', 'models.json'), 'utf8'));
      expect(models.providers.mock).toMatchObject({ baseUrl: 'http://127.0.0.1:9/v1', api: 'openai-completions' });
      const settings = JSON.parse(readFileSync(path.join(dir, 'pi-agent', 'settings.json'), 'utf8'));
      expect(settings).toMatchObject({ defaultProvider: 'mock', retry: { enabled: false, provider: { maxRetries: 0 } } });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
