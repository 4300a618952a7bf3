import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claudeCodeAdapter } from '../../src/adapters/claude-code/index.js';
import { SETTINGS_FILE, SIGNAL_FILE, hookCommand, parseStopSignal } from '../../src/adapters/claude-code/signals.js';
import type { LaunchRequest } from '../../src/adapters/types.js';

/** Claude Code's launch plan with the Stop-hook signal, and the hook command itself (run with sh, no CLI). */
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'cal-claude-signals-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function request(extra: Partial<LaunchRequest> = {}): LaunchRequest {
  return {
    cli: { path: '/opt/claude', realPath: '/opt/claude.exe', version: '2.1.29' },
    env: { HOME: '/home/u', PATH: '/usr/bin' },
    config: { cwd: '/work/project', model: null, systemPrompt: null, mcpConfigPath: null, toolPolicy: 'default' },
    mode: 'fresh',
    sessionId: '11111111-2222-4333-8444-555555555555',
    message: 'hello',
    ...extra,
  };
}

describe('Claude Code launch plan', () => {
  it('without a session dir: no settings file, no signal', () => {
    const plan = claudeCodeAdapter.launch(request());
    expect(plan.argv).not.toContain('--settings');
    expect(plan.signalFile ?? null).toBeNull();
  });

  it("with a session dir: --settings names a file of the handle's own holding only a Stop hook, and the plan names the signal file", () => {
    const sessionDir = path.join(dir, 'session');
    const plan = claudeCodeAdapter.launch(request({ sessionDir }));
    const settings = path.join(sessionDir, SETTINGS_FILE);
    const i = plan.argv.indexOf('--settings');
    expect(i).toBeGreaterThan(0);
    expect(plan.argv[i + 1]).toBe(settings);
    // Before `--`, which ends the options: the message is the last argument.
    expect(i).toBeLessThan(plan.argv.indexOf('--'));
    expect(plan.argv.at(-1)).toBe('hello');
    expect(plan.signalFile).toBe(path.join(sessionDir, SIGNAL_FILE));
    const parsed = JSON.parse(readFileSync(settings, 'utf8'));
    // Event names a release does not know make it refuse the whole file (2.1.29 on StopFailure).
    expect(Object.keys(parsed)).toEqual(['hooks']);
    expect(Object.keys(parsed.hooks)).toEqual(['Stop']);
    expect(parsed.hooks.Stop).toEqual([{ hooks: [{ type: 'command', command: hookCommand(plan.signalFile!) }] }]);
    expect(statSync(settings).mode & 0o777).toBe(0o600);
    expect(statSync(sessionDir).mode & 0o777).toBe(0o700);
  });

  it('a resume writes the same files again and resumes by id', () => {
    const sessionDir = path.join(dir, 'session');
    const first = claudeCodeAdapter.launch(request({ sessionDir }));
    const again = claudeCodeAdapter.launch(request({ sessionDir, mode: 'resume' }));
    expect(again.signalFile).toBe(first.signalFile);
    expect(again.argv.slice(0, 3)).toEqual(['/opt/claude.exe', '--resume', '11111111-2222-4333-8444-555555555555']);
  });

  it('never self-updates and asks for no prompt suggestions', () => {
    const plan = claudeCodeAdapter.launch(request());
    expect(plan.env).toMatchObject({ DISABLE_AUTOUPDATER: '1', CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION: 'false', HOME: '/home/u' });
  });
});

describe('the Stop hook command', () => {
  const run = (command: string, stdin: string) => execFileSync('/bin/sh', ['-c', command], { input: stdin, encoding: 'utf8' });

  it('appends its stdin payload as one JSON line, with the time it ran', () => {
    const file = path.join(dir, "it's signals.jsonl");
    const payload = { session_id: 's1', hook_event_name: 'Stop', prompt_id: 'p1', last_assistant_message: 'line one\nline two' };
    const before = Date.now();
    expect(run(hookCommand(file), JSON.stringify(payload, null, 2))).toBe('');
    run(hookCommand(file), JSON.stringify({ ...payload, prompt_id: 'p2' }));
    const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
    expect(lines).toHaveLength(2);
    const first = JSON.parse(lines[0]!);
    expect(first).toMatchObject(payload);
    expect(Date.parse(first.cal_received_at)).toBeGreaterThanOrEqual(before - 5);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(parseStopSignal(first)).toEqual({ sessionId: 's1', promptId: 'p1', lastAssistantMessage: 'line one\nline two', receivedAt: Date.parse(first.cal_received_at) });
  });

  it('keeps what is not a JSON object, and never fails the hook (a folder that is gone)', () => {
    const file = path.join(dir, 'signals.jsonl');
    run(hookCommand(file), 'not json');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ unparsed: 'not json' });
    expect(() => run(hookCommand(path.join(dir, 'gone', 'signals.jsonl')), '{}')).not.toThrow();
  });

  it("runs clear of the pane's NODE_OPTIONS and NODE_EXTRA_CA_CERTS (a preload that would fail, a CA bundle to read first)", () => {
    const file = path.join(dir, 'clean-env.jsonl');
    execFileSync('/bin/sh', ['-c', hookCommand(file)], {
      input: '{"hook_event_name":"Stop"}',
      env: { ...process.env, NODE_OPTIONS: `--require ${path.join(dir, 'no-such-preload.cjs')}`, NODE_EXTRA_CA_CERTS: path.join(dir, 'no-such-bundle.pem') },
    });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ hook_event_name: 'Stop' });
  });

  it('only Stop payloads are signals', () => {
    expect(parseStopSignal({ hook_event_name: 'SessionEnd', session_id: 's' })).toBeNull();
    expect(parseStopSignal({ unparsed: 'x' })).toBeNull();
    expect(parseStopSignal({ hook_event_name: 'Stop' })).toEqual({ sessionId: null, promptId: null, lastAssistantMessage: null, receivedAt: null });
  });
});
