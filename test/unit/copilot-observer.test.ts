import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { classifyEvent, CopilotTurnObserver, END_WITHOUT_REPLY_GRACE_MS } from '../../src/adapters/copilot/events.js';
import { isTrusted, scriptedCopilotEnv, trustFolder } from '../../src/adapters/copilot/home.js';
import { copilotAdapter } from '../../src/adapters/copilot/index.js';
import { ended, feedFixture, fixtureRecords } from '../support/fixtures.js';

/** Observer tests over an event log recorded from the real GitHub Copilot CLI 1.0.102 (TUI in tmux, scripted model). */
const NAME = 'interactive-tool-error-interrupt-retry';
const observe = (message: string) => feedFixture(new CopilotTurnObserver(message), 'copilot', NAME);

describe('Copilot event-log observer (recorded 1.0.102 session)', () => {
  afterEach(() => vi.useRealTimers());

  it('every line of the recorded log is a session event', () => {
    expect(fixtureRecords('copilot', NAME).filter((r) => classifyEvent(r) === null)).toEqual([]);
  });

  it('a pasted multi-line prompt completes with the reply, keyed by its messageId (the clock Copilot adds for the model is not in `content`)', () => {
    const o = observe('Remember the codeword PLUM.\r\nSecond line here.');
    expect(ended(o)).toEqual({ phase: 'ended', status: 'completed', turnKey: '62cb07b5-54fd-4a32-b3bb-abe3d65e911a', answer: 'OK, I will remember the codeword PLUM.', error: null });
    expect(o.unknownRecords).toBe(0);
  });

  it('a tool turn goes on past the model call that asked for the tool and lists the shell command with its output', () => {
    const o = observe('Run this [[cal:shell=echo hi-there]]');
    expect(ended(o)).toMatchObject({ status: 'completed', answer: 'Tool finished: hi-there' });
    expect(o.tools).toEqual([
      { kind: 'shell', name: 'echo hi-there', input: { command: 'echo hi-there', description: 'Run: echo hi-there' }, output: 'hi-there\n<shellId: 0 completed with exit code 0>', status: 'completed' },
    ]);
  });

  it('a failed request (the call ends, then session.error) fails with Copilot\'s message, never an empty answer', () => {
    expect(ended(observe('Fail now [[cal:http=400]]'))).toMatchObject({ status: 'failed', answer: null, error: '400 Mock error 400' });
    expect(ended(observe('Now fail [[cal:http=500]]'))).toMatchObject({ status: 'failed', answer: null, error: expect.stringContaining('retried 5 times') });
  });

  it('Ctrl-C (the call ends, then abort) is interrupted', () => {
    expect(ended(observe('Slow two [[cal:delay=8000]]'))).toMatchObject({ status: 'interrupted', answer: null });
  });

  it('a model call that ends with no reply and nothing after it fails once the grace has passed, not before', () => {
    vi.useFakeTimers();
    const o = new CopilotTurnObserver('hello');
    o.feed({ type: 'user.message', data: { content: 'hello', messageId: 'm1' }, id: 'e1' });
    o.feed({ type: 'assistant.turn_start', data: { turnId: '0' }, id: 'e2' });
    o.feed({ type: 'assistant.turn_end', data: { turnId: '0' }, id: 'e3' });
    expect(o.observation.phase).toBe('running');
    vi.advanceTimersByTime(END_WITHOUT_REPLY_GRACE_MS);
    expect(ended(o)).toMatchObject({ status: 'failed', answer: null });
  });

  it('a message Copilot injects (a `source`) is never our prompt; a newer prompt or the CLI\'s shutdown before any end is lost', () => {
    const injected = new CopilotTurnObserver('hello');
    injected.feed({ type: 'user.message', data: { content: 'hello', source: 'skill-pdf' }, id: 'e1' });
    expect(injected.observation.phase).toBe('waiting');
    const next = new CopilotTurnObserver('hello');
    next.feed({ type: 'user.message', data: { content: 'hello', messageId: 'm1' }, id: 'e1' });
    next.feed({ type: 'user.message', data: { content: 'other', messageId: 'm2' }, id: 'e2' });
    expect(ended(next)).toMatchObject({ status: 'lost' });
    const shutdown = new CopilotTurnObserver('hello');
    shutdown.feed({ type: 'user.message', data: { content: 'hello', messageId: 'm1' }, id: 'e1' });
    shutdown.feed({ type: 'session.shutdown', data: {}, id: 'e2' });
    expect(ended(shutdown)).toMatchObject({ status: 'lost' });
  });

  it('a sub-agent\'s messages (agentId) never end the main turn', () => {
    const o = new CopilotTurnObserver('hello');
    o.feed({ type: 'user.message', data: { content: 'hello', messageId: 'm1' }, id: 'e1' });
    o.feed({ type: 'assistant.message', data: { messageId: 'a', content: 'sub', toolRequests: [] }, agentId: 'sub-1', id: 'e2' });
    o.feed({ type: 'assistant.turn_end', data: { turnId: '0' }, agentId: 'sub-1', id: 'e3' });
    expect(o.observation.phase).toBe('running');
  });
});

describe('Copilot home', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const tmp = () => {
    const d = mkdtempSync(path.join(os.tmpdir(), 'cal-copilot-home-'));
    dirs.push(d);
    return d;
  };

  it('trusts a folder in Copilot\'s config, keeping its own comment lines and keys; in a user\'s own home as in one cal manages (issue 50, item 12)', async () => {
    const dir = tmp();
    const env = await scriptedCopilotEnv(dir, 'http://127.0.0.1:9/', { HOME: path.join(dir, 'home') });
    expect(env).toMatchObject({ COPILOT_HOME: path.join(dir, 'copilot-home'), COPILOT_PROVIDER_BASE_URL: 'http://127.0.0.1:9/v1', COPILOT_PROVIDER_TYPE: 'openai', COPILOT_OFFLINE: 'true', COPILOT_AUTO_UPDATE: 'false' });
    const config = path.join(env.COPILOT_HOME!, 'config.json');
    writeFileSync(config, '// User settings belong in settings.json.\n// This file is managed automatically.\n{\n  "firstLaunchAt": "2026-12-05T18:39:24.290Z"\n}\n');
    expect(await trustFolder(env, '/work/a')).toBe(true);
    expect(await trustFolder(env, '/work/a')).toBe(false);
    const text = readFileSync(config, 'utf8');
    expect(text.startsWith('// User settings belong in settings.json.\n// This file is managed automatically.\n{')).toBe(true);
    expect(JSON.parse(text.replace(/^\/\/.*$/gm, ''))).toEqual({ firstLaunchAt: '2026-12-05T18:39:24.290Z', trustedFolders: ['/work/a'] });
    expect(isTrusted(env, '/work/a')).toBe(true);

    // A folder under a trusted one is trusted; a sibling is not.
    expect(isTrusted(env, '/work/a/b')).toBe(true);
    expect(isTrusted(env, '/work/ab')).toBe(false);

    // The user's own home (~/.copilot, no config.json yet): the trust policy's default writes it too.
    const user = { HOME: tmp() };
    expect(isTrusted(user, '/work/a')).toBe(false);
    expect(await trustFolder(user, '/work/a')).toBe(true);
    expect(isTrusted(user, '/work/a')).toBe(true);
    expect(isTrusted({ HOME: tmp(), COPILOT_ALLOW_ALL: 'true' }, '/work/a')).toBe(true);
  });

  it('refuses a tool policy it cannot map before anything runs; a system prompt becomes a custom instructions file Copilot reads through COPILOT_CUSTOM_INSTRUCTIONS_DIRS', async () => {
    const config = { cwd: '/w', model: null, systemPrompt: null, mcpConfigPath: null, toolPolicy: 'nonsense' };
    await expect(copilotAdapter.prepare({ HOME: tmp() }, config)).rejects.toMatchObject({ kind: 'usage' });
    const sessionDir = tmp();
    const cli = { path: '/bin/copilot', realPath: '/bin/copilot', version: '1.0.102' };
    const plan = copilotAdapter.launch({ cli, env: { HOME: tmp(), COPILOT_CUSTOM_INSTRUCTIONS_DIRS: '/mine' }, config: { ...config, toolPolicy: 'default', systemPrompt: 'Be brief.' }, mode: 'fresh', sessionId: 's1', message: 'hi', sessionDir });
    const root = path.join(sessionDir, 'copilot-instructions');
    expect(plan.env.COPILOT_CUSTOM_INSTRUCTIONS_DIRS).toBe(`${root},/mine`);
    expect(readFileSync(path.join(root, '.github', 'instructions', 'cal-system-prompt.instructions.md'), 'utf8')).toBe('---\napplyTo: "**"\n---\nBe brief.\n');
    // A user's own home: Copilot's own permission prompts stay (no --allow-tool).
    expect(plan.argv.some((a) => a.startsWith('--allow-tool'))).toBe(false);
  });

  it('launches a fresh session with the id cal chose and the message in --interactive=, resumes with --resume=', async () => {
    const home = tmp();
    const cli = { path: '/bin/copilot', realPath: '/bin/copilot', version: '1.0.102' };
    const config = { cwd: '/w', model: 'm1', systemPrompt: null, mcpConfigPath: null, toolPolicy: 'bypass' };
    const fresh = copilotAdapter.launch({ cli, env: { HOME: home }, config, mode: 'fresh', sessionId: 'a1b2', message: '-dash' });
    expect(fresh.argv).toEqual(['/bin/copilot', '--session-id=a1b2', '--model=m1', '--allow-all', '--no-auto-update', '--interactive=-dash']);
    expect(fresh).toMatchObject({ deliversMessage: true, sessionId: 'a1b2' });
    expect(() => copilotAdapter.launch({ cli, env: { HOME: home }, config, mode: 'resume', sessionId: 'gone', message: 'x' })).toThrow(expect.objectContaining({ kind: 'resume_unavailable' }));
  });
});
