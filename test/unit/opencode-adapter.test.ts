import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CalError } from '../../src/errors.js';
import { opencodeAdapter } from '../../src/adapters/opencode/index.js';
import { sessionFlags } from '../../src/adapters/opencode/launch.js';
import { OpencodeTurnObserver } from '../../src/adapters/opencode/turn.js';
import type { LaunchRequest } from '../../src/adapters/types.js';
import { fixtureRecords } from '../support/fixtures.js';

/**
 * OpenCode (1.18.33, docs/opencode.md): a turn's answer and end come from cal's mirror of the
 * SQLite store (rows as `opencode db` printed them, recorded by test/e2e/opencode.test.ts), and the
 * session's settings become flags and OPENCODE_CONFIG_CONTENT.
 */
const session = fixtureRecords('opencode', 'tmux-session');

function observe(records: unknown[], message: string): OpencodeTurnObserver {
  const obs = new OpencodeTurnObserver(message);
  for (const r of records) obs.feed(r);
  return obs;
}

describe("OpenCode's turns, from the mirror of its store", () => {
  it('each turn ends completed with its own answer', () => {
    expect(observe(session, 'Remember the codeword KIWI.').observation).toMatchObject({ phase: 'ended', status: 'completed', answer: 'OK, I will remember the codeword KIWI.' });
    expect(observe(session, 'What was the codeword, again?').observation).toMatchObject({ phase: 'ended', status: 'completed', answer: 'The codeword was KIWI.' });
    expect(observe(session, 'What was the codeword, again?').unknownRecords).toBe(0);
  });

  it('a step that finished on tool calls is not the end; the shell call is named by its command', () => {
    const message = 'Run it [[cal:shell=echo hello-from-opencode]]';
    const done = observe(session, message);
    expect(done.observation).toMatchObject({ phase: 'ended', status: 'completed', answer: 'Tool finished: hello-from-opencode' });
    expect(done.tools).toEqual([expect.objectContaining({ kind: 'shell', name: 'echo hello-from-opencode', status: 'completed' })]);
    // Without the step after the one that ended on `tool-calls`: still running.
    const finalStep = session.findLastIndex((r) => r.kind === 'message' && JSON.parse(r.data).finish === 'stop');
    expect(observe(session.filter((_, i) => i !== finalStep), message).observation).toMatchObject({ phase: 'running' });
  });

  it('an aborted reply is interrupted, any other error failed', () => {
    const last = session.findLastIndex((r) => r.kind === 'message' && JSON.parse(r.data).role === 'assistant');
    const withError = (name: string) =>
      session.map((r, i) => (i === last ? { ...r, data: JSON.stringify({ ...JSON.parse(r.data), finish: undefined, error: { name, data: { message: 'stopped' } } }) } : r));
    const message = 'Run it [[cal:shell=echo hello-from-opencode]]';
    expect(observe(withError('MessageAbortedError'), message).observation).toMatchObject({ phase: 'ended', status: 'interrupted' });
    expect(observe(withError('APIError'), message).observation).toMatchObject({ phase: 'ended', status: 'failed', error: 'stopped' });
  });
});

describe("OpenCode's launch", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const request = (over: Partial<LaunchRequest['config']> = {}, env: Record<string, string> = {}, mode: 'fresh' | 'resume' = 'fresh'): LaunchRequest => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cal-opencode-'));
    dirs.push(dir);
    return {
      cli: { path: '/bin/opencode', realPath: '/bin/opencode', version: '1.18.33' } as LaunchRequest['cli'],
      env,
      config: { cwd: dir, model: null, systemPrompt: null, mcpConfigPath: null, toolPolicy: 'default', ...over },
      mode,
      sessionId: mode === 'resume' ? 'ses_abc' : null,
      message: '-starts with a dash',
      sessionDir: path.join(dir, 'session'),
    };
  };

  it('a fresh TUI gets the message with --prompt=; a resumed one (which ignores --prompt) gets it pasted', () => {
    expect(opencodeAdapter.launch(request())).toMatchObject({ argv: ['/bin/opencode', '--prompt=-starts with a dash'], deliversMessage: true, sessionId: null });
    expect(opencodeAdapter.launch(request({}, {}, 'resume'))).toMatchObject({ argv: ['/bin/opencode', '--session', 'ses_abc'], deliversMessage: false, sessionId: 'ses_abc' });
  });

  it('maps each tool policy, and refuses one it does not know', () => {
    expect(sessionFlags(request({ toolPolicy: 'read-only' })).argv).toEqual(['--agent', 'plan']);
    expect(sessionFlags(request({ toolPolicy: 'bypass' })).argv).toEqual(['--auto']);
    expect(JSON.parse(sessionFlags(request({ toolPolicy: 'accept-edits' })).env.OPENCODE_CONFIG_CONTENT!)).toEqual({ permission: { edit: 'allow', bash: 'ask' } });
    expect(sessionFlags(request()).env.OPENCODE_CONFIG_CONTENT).toBeUndefined();
    const refused = (() => {
      try {
        return sessionFlags(request({ toolPolicy: 'everything' }));
      } catch (e) {
        return e;
      }
    })();
    expect(refused).toBeInstanceOf(CalError);
    expect((refused as CalError).kind).toBe('usage');
  });

  it("puts the system prompt in an instructions file, merged over the user's own OPENCODE_CONFIG_CONTENT", () => {
    const req = request({ systemPrompt: 'Be brief.', model: 'scripted/scripted-model' }, { OPENCODE_CONFIG_CONTENT: '{"theme":"dark"}' });
    const flags = sessionFlags(req);
    expect(flags.argv).toEqual(['--model', 'scripted/scripted-model']);
    const content = JSON.parse(flags.env.OPENCODE_CONFIG_CONTENT!);
    expect(content.theme).toBe('dark');
    expect(readFileSync(content.instructions[0], 'utf8')).toBe('Be brief.');
    expect(flags.env.OPENCODE_DISABLE_MODELS_FETCH).toBe('1');
  });
});
