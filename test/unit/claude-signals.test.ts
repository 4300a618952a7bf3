import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claudeCodeAdapter } from '../../src/adapters/claude-code/index.js';
import { ASYNC_HOOK_SINCE, SETTINGS_FILE, SHELL_HOOK_SINCE, SIGNAL_FILE, hookCommand, nodeHookCommand, parseStopSignal, shellHookCommand } from '../../src/adapters/claude-code/signals.js';
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
    expect(parsed.hooks.Stop).toEqual([{ hooks: [{ type: 'command', command: nodeHookCommand(plan.signalFile!) }] }]);
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

  it('the shell hook from the first release that names the prompt in its Stop payload, the node hook before it and for a version that is no number', () => {
    const sessionDir = path.join(dir, 'session');
    const hookOf = (version: string) => {
      const plan = claudeCodeAdapter.launch(request({ sessionDir, cli: { path: '/opt/claude', realPath: '/opt/claude.exe', version } }));
      return JSON.parse(readFileSync(path.join(sessionDir, SETTINGS_FILE), 'utf8')).hooks.Stop[0].hooks[0].command as string;
    };
    const signals = path.join(sessionDir, SIGNAL_FILE);
    for (const version of [SHELL_HOOK_SINCE, '2.1.197', '2.1.328', '2.1.332', '2.2.0', '3.0.0']) expect(hookOf(version), version).toBe(shellHookCommand(signals));
    for (const version of ['2.0.12', '2.0.76', '2.1.29', '2.1.73', '2.1.195', 'nightly']) expect(hookOf(version), version).toBe(nodeHookCommand(signals));
    expect(hookCommand(signals, '2.1.29')).toBe(nodeHookCommand(signals));
  });

  it('the hook runs in the background (async) from the first release measured with it, blocking before it and for a version that is no number', () => {
    const sessionDir = path.join(dir, 'session');
    const hookOf = (version: string) => {
      claudeCodeAdapter.launch(request({ sessionDir, cli: { path: '/opt/claude', realPath: '/opt/claude.exe', version } }));
      return JSON.parse(readFileSync(path.join(sessionDir, SETTINGS_FILE), 'utf8')).hooks.Stop[0].hooks[0] as Record<string, unknown>;
    };
    for (const version of [ASYNC_HOOK_SINCE, '2.1.332', '2.2.0', '3.0.0']) expect(hookOf(version), version).toMatchObject({ type: 'command', async: true });
    for (const version of ['2.0.12', '2.1.29', SHELL_HOOK_SINCE, '2.1.327', 'nightly']) expect(Object.keys(hookOf(version)).sort(), version).toEqual(['command', 'type']);
  });

  it('never self-updates and asks for no prompt suggestions', () => {
    const plan = claudeCodeAdapter.launch(request());
    expect(plan.env).toMatchObject({ DISABLE_AUTOUPDATER: '1', CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION: 'false', HOME: '/home/u' });
  });
});

describe('the Stop hook command (node)', () => {
  const run = (command: string, stdin: string) => execFileSync('/bin/sh', ['-c', command], { input: stdin, encoding: 'utf8' });
  const hookCommand = nodeHookCommand;

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

describe('the Stop hook command (shell)', () => {
  const run = (command: string, stdin: string, env: NodeJS.ProcessEnv = process.env) =>
    spawnSync('/bin/sh', ['-c', command], { input: stdin, encoding: 'utf8', env });

  it('appends its stdin payload as one JSON line, with the time it ran to the second, read as the end of that second', () => {
    const file = path.join(dir, "it's $(signals) `x`.jsonl");
    // What JSON can hold that a shell could take for its own: quotes, %, backslashes, $( ), line breaks, non-ASCII.
    const text = `it's "quoted" 100% \\ $(touch ${path.join(dir, 'pwned')}) \`x\` ${'${HOME}'}\nline two\r\n\t€ 🙂`;
    const payload = { session_id: 's1', hook_event_name: 'Stop', prompt_id: 'p1', last_assistant_message: text };
    const before = Math.floor(Date.now() / 1000) * 1000;
    const first = run(shellHookCommand(file), JSON.stringify(payload, null, 2));
    expect(first.status).toBe(0);
    expect(first.stdout + first.stderr).toBe('');
    expect(run(shellHookCommand(file), JSON.stringify({ ...payload, prompt_id: 'p2' }) + '\n').status).toBe(0);
    const after = Date.now();
    const lines = readFileSync(file, 'utf8').split('\n');
    expect(lines.at(-1)).toBe('');
    expect(lines.slice(0, -1)).toHaveLength(2);
    const [a, b] = lines.slice(0, -1).map((l) => JSON.parse(l));
    expect(a).toEqual({ ...payload, cal_received_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/) });
    expect(b).toMatchObject({ prompt_id: 'p2', last_assistant_message: text });
    expect(existsSync(path.join(dir, 'pwned'))).toBe(false);
    const signal = parseStopSignal(a)!;
    expect(signal).toMatchObject({ sessionId: 's1', promptId: 'p1', lastAssistantMessage: text });
    // To the second: the hook ran within [stamp, stamp + 1 s); cal counts from the latest of it.
    expect(signal.receivedAt).toBe(Date.parse(a.cal_received_at) + 999);
    expect(signal.receivedAt!).toBeGreaterThanOrEqual(before + 999);
    expect(signal.receivedAt!).toBeLessThanOrEqual(Math.floor(after / 1000) * 1000 + 999);
  });

  it("is the owner's alone under any umask, never fails the hook nor writes to the pane (a folder that is gone), and a payload that is not an object makes a line the reader skips", () => {
    const file = path.join(dir, 'signals.jsonl');
    expect(run(`umask 000; ${shellHookCommand(file)}`, '{"hook_event_name":"Stop"}').status).toBe(0);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(parseStopSignal(JSON.parse(readFileSync(file, 'utf8')))).toMatchObject({ promptId: null, sessionId: null });
    const gone = run(shellHookCommand(path.join(dir, 'gone', 'signals.jsonl')), '{"hook_event_name":"Stop"}');
    expect(gone.status).toBe(0);
    expect(gone.stdout + gone.stderr).toBe('');
    const other = path.join(dir, 'other.jsonl');
    for (const stdin of ['not json', '', '[1,2]']) expect(run(shellHookCommand(other), stdin).status).toBe(0);
    for (const line of readFileSync(other, 'utf8').split('\n').filter(Boolean)) expect(() => JSON.parse(line)).toThrow();
  });

  it('needs no node: it runs with a PATH that has only the system tools', () => {
    const file = path.join(dir, 'no-node.jsonl');
    const r = run(shellHookCommand(file), '{"hook_event_name":"Stop","prompt_id":"p"}', { PATH: '/usr/bin:/bin' });
    expect(r.status).toBe(0);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ hook_event_name: 'Stop', prompt_id: 'p' });
  });

  it('a millisecond time (the node hook\'s) is taken as it is', () => {
    expect(parseStopSignal({ hook_event_name: 'Stop', cal_received_at: '2026-12-01T21:13:51.250Z' })!.receivedAt).toBe(Date.parse('2026-12-01T21:13:51.250Z'));
    expect(parseStopSignal({ hook_event_name: 'Stop', cal_received_at: '2026-12-01T21:13:51Z' })!.receivedAt).toBe(Date.parse('2026-12-01T21:13:51.999Z'));
    expect(parseStopSignal({ hook_event_name: 'Stop', cal_received_at: 'soon' })!.receivedAt).toBeNull();
  });
});
