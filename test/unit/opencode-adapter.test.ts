import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CalError } from '../../src/errors.js';
import { opencodeAdapter } from '../../src/adapters/opencode/index.js';
import { sessionFlags } from '../../src/adapters/opencode/launch.js';
import { OPENCODE } from '../../src/adapters/opencode/flavour.js';
import { OpencodeTurnObserver } from '../../src/adapters/opencode/turn.js';
import { newSessionId, sessionIdFor, withMcpTool } from '../../src/adapters/opencode/store.js';
import { mcpToolOf } from '../../src/adapters/opencode/tool-names.js';
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

describe("OpenCode's names for MCP tools", () => {
  it('maps <server>_<tool> back to the server cal configured and its tool, longest server first', () => {
    expect(mcpToolOf('calprobe_echo', ['calprobe'])).toEqual({ server: 'calprobe', name: 'echo' });
    expect(mcpToolOf('calprobe_read_file', ['calprobe'])).toEqual({ server: 'calprobe', name: 'read_file' });
    expect(mcpToolOf('my_srv_read_file', ['my', 'my_srv'])).toEqual({ server: 'my_srv', name: 'read_file' });
    // OpenCode replaces what is not [A-Za-z0-9_-] in a server's name with `_`.
    expect(mcpToolOf('my_srv_echo', ['my.srv'])).toEqual({ server: 'my.srv', name: 'echo' });
  });

  it("leaves OpenCode's own tools (underscores and all) and unknown servers alone", () => {
    expect(mcpToolOf('apply_patch', ['calprobe'])).toBeNull();
    expect(mcpToolOf('bash', [])).toBeNull();
    expect(mcpToolOf('other_echo', ['calprobe'])).toBeNull();
    expect(mcpToolOf('calprobe_', ['calprobe'])).toBeNull();
  });

  it("a turn's MCP call is recorded as its server and tool, as the mirror noted them from the session's servers", () => {
    const message = 'Run it [[cal:shell=echo hello-from-opencode]]';
    const asMcp = (servers: string[]) =>
      session.map((r) => {
        if (r.kind !== 'part') return r;
        const data = JSON.parse(r.data);
        if (data.type !== 'tool') return r;
        return withMcpTool({ ...r, data: JSON.stringify({ ...data, tool: 'calprobe_echo', state: { ...data.state, input: { text: 'hi' }, output: 'hi' } }) }, servers);
      });
    expect(observe(asMcp(['calprobe']), message).tools).toEqual([expect.objectContaining({ kind: 'mcp', server: 'calprobe', name: 'echo', input: { text: 'hi' }, output: 'hi' })]);
    // No such server configured (or a mirror from before cal noted them): the name as OpenCode gave it.
    expect(observe(asMcp([]), message).tools).toEqual([expect.objectContaining({ kind: 'tool', name: 'calprobe_echo' })]);
    // OpenCode's own shell tool stays a shell call named by its command.
    expect(observe(session.map((r) => (r.kind === 'part' ? withMcpTool(r, ['calprobe']) : r)), message).tools).toEqual([expect.objectContaining({ kind: 'shell', name: 'echo hello-from-opencode' })]);
  });
});

describe("OpenCode's session ids", () => {
  it("are made in OpenCode's own descending form (measured: a session created at 1796525178278 ms is ses_db6c14259ffe…)", () => {
    expect(newSessionId(1796525178278, (n) => Buffer.alloc(n, 0))).toBe('ses_db6c14259ffe00000000000000');
    expect(newSessionId(1796525178278 + 1000) < newSessionId(1796525178278)).toBe(true);
  });

  it("a structured first turn's id is derived from the handle's own, the same every time", () => {
    const id = sessionIdFor('0b6f3c2e-1111-4222-8333-444455556666');
    expect(id).toMatch(/^ses_[0-9a-f]{12}[0-9A-Za-z]{14}$/);
    expect(sessionIdFor('0b6f3c2e-1111-4222-8333-444455556666')).toBe(id);
    expect(sessionIdFor('0b6f3c2e-1111-4222-8333-444455556667')).not.toBe(id);
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

  it('a fresh TUI gets a session id cal chose (each launch its own); a resumed one its own id; both get the message pasted (a TUI given --session ignores --prompt)', () => {
    const fresh = opencodeAdapter.launch(request());
    expect(fresh.sessionId).toMatch(/^ses_[0-9a-f]{12}[0-9A-Za-z]{14}$/);
    expect(fresh).toMatchObject({ argv: ['/bin/opencode', '--session', fresh.sessionId], deliversMessage: false });
    expect(opencodeAdapter.launch(request()).sessionId).not.toBe(fresh.sessionId);
    expect(opencodeAdapter.launch(request({}, {}, 'resume'))).toMatchObject({ argv: ['/bin/opencode', '--session', 'ses_abc'], deliversMessage: false, sessionId: 'ses_abc' });
  });

  it('maps each tool policy, and refuses one it does not know', () => {
    expect(sessionFlags(OPENCODE, request({ toolPolicy: 'read-only' })).argv).toEqual(['--agent', 'plan']);
    expect(sessionFlags(OPENCODE, request({ toolPolicy: 'bypass' })).argv).toEqual(['--auto']);
    expect(JSON.parse(sessionFlags(OPENCODE, request({ toolPolicy: 'accept-edits' })).env.OPENCODE_CONFIG_CONTENT!)).toEqual({ permission: { edit: 'allow', bash: 'ask' } });
    expect(sessionFlags(OPENCODE, request()).env.OPENCODE_CONFIG_CONTENT).toBeUndefined();
    const refused = (() => {
      try {
        return sessionFlags(OPENCODE, request({ toolPolicy: 'everything' }));
      } catch (e) {
        return e;
      }
    })();
    expect(refused).toBeInstanceOf(CalError);
    expect((refused as CalError).kind).toBe('usage');
  });

  it("puts the system prompt in an instructions file, merged over the user's own OPENCODE_CONFIG_CONTENT", () => {
    const req = request({ systemPrompt: 'Be brief.', model: 'scripted/scripted-model' }, { OPENCODE_CONFIG_CONTENT: '{"theme":"dark"}' });
    const flags = sessionFlags(OPENCODE, req);
    expect(flags.argv).toEqual(['--model', 'scripted/scripted-model']);
    const content = JSON.parse(flags.env.OPENCODE_CONFIG_CONTENT!);
    expect(content.theme).toBe('dark');
    expect(readFileSync(content.instructions[0], 'utf8')).toBe('Be brief.');
    expect(flags.env.OPENCODE_DISABLE_MODELS_FETCH).toBe('1');
  });
});
