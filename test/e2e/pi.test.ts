import { existsSync, realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { handleFromStderr, killStateTmux, runCal, type CalRun } from '../support/cal.js';
import { cliBin, pinnedCli } from '../support/clis.js';
import { makePiHome, type ModelCliHome } from '../support/model-homes.js';

/**
 * Pi acceptance: the real pinned Pi binary (0.73.1) in real tmux against the scripted model,
 * driven through the built `cal` as a black box. The tests build on each other (one logical
 * session), so they run in order. The Pi agent dir (models.json with a `mock` provider,
 * retries off) stands for the user's own Pi config: cal must use it as it is.
 */
const TIMEOUT = ['--timeout', '60'];

function eventsOf(run: CalRun): string[] {
  return run.stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l).event);
}

async function readSession(file: string): Promise<any[]> {
  return (await fs.readFile(file, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

async function listSessions(agentDir: string): Promise<string[]> {
  const root = path.join(agentDir, 'sessions');
  const out: string[] = [];
  for (const dir of await fs.readdir(root).catch(() => [] as string[])) {
    for (const f of await fs.readdir(path.join(root, dir)).catch(() => [] as string[])) out.push(path.join(root, dir, f));
  }
  return out.sort();
}

describe('Pi in tmux, end to end', () => {
  let server: ModelServer;
  let h: ModelCliHome;
  let state: string;
  let env: Record<string, string>;
  let work: string;
  let userConfig: Record<string, string>;
  let handle = '';

  const cal = (args: string[], input?: string) => runCal(['--state-dir', state, ...args], { env, input });
  const inspect = async () => (await cal(['inspect', handle, '--json'])).json;

  beforeAll(async () => {
    server = await startModelServer({});
    h = await makePiHome(server.url);
    state = path.join(h.root, 'state');
    work = realpathSync(h.cwd);
    // The pinned CLIs of this repository are what `pi` on PATH finds.
    env = { ...h.env, PATH: `${path.dirname(cliBin('pi'))}:${h.env.PATH}` };
    userConfig = {};
    for (const f of ['models.json', 'settings.json']) userConfig[f] = await fs.readFile(path.join(h.configDir, f), 'utf8');
  });

  afterAll(async () => {
    if (state) await killStateTmux(state);
    await server?.close();
    await h?.cleanup();
  });

  it('starts and remembers; the handle pins the binary, binds Pi\'s session id and the file cal chose', async () => {
    const run = await cal(['start', '--provider', 'pi', '--cwd', work, ...TIMEOUT, 'Remember the codeword KIWI.']);
    expect(run.stderr).toMatch(/^handle: [a-z0-9]+$/m);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe('OK, I will remember the codeword KIWI.');
    handle = handleFromStderr(run.stderr) ?? '';

    const view = await inspect();
    const id = view.provider.nativeSessionId as string;
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(view.currentPaneAlive).toBe(true);
    expect(view.provider.cli.version).toBe(pinnedCli.pi.version);
    const file = view.provider.transcript.path as string;
    expect(path.dirname(file)).toBe(path.join(h.configDir, 'sessions', `--${work.slice(1).replace(/\//g, '-')}--`));
    const session = await readSession(file);
    expect(session[0]).toMatchObject({ type: 'session', id, cwd: work });
    expect(view.turns.at(-1).turnKey).toMatch(/^[0-9a-f]{8}$/);
    // cal wrote nothing into the user's Pi config. (Pi itself records `lastChangelogVersion` in
    // settings.json on its first interactive start; nothing else changes.)
    for (const [f, text] of Object.entries(userConfig)) {
      const now = JSON.parse(await fs.readFile(path.join(h.configDir, f), 'utf8'));
      delete now.lastChangelogVersion;
      expect(now).toEqual(JSON.parse(text));
    }
  });

  it('continue with the pane alive pastes into it (no relaunch) and recalls', async () => {
    const before = await inspect();
    const run = await cal(['continue', handle, '--json', '--events', ...TIMEOUT, 'What was the codeword?']);
    expect(run.code).toBe(0);
    expect(run.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was KIWI.' });
    expect(eventsOf(run)).toEqual(['running', 'completed']);
    const after = await inspect();
    expect(after.panes).toHaveLength(1);
    expect(after.provider.tmux.paneId).toBe(before.provider.tmux.paneId);
    expect(after.provider.transcript.offset).toBeGreaterThan(before.provider.transcript.offset);
  });

  it('after kill-tmux, continue resumes natively: one new user message, the same session file appended', async () => {
    const before = await inspect();
    const sizeBefore = (await fs.stat(before.provider.transcript.path)).size;
    expect((await cal(['kill-tmux', handle])).code).toBe(0);
    server.clearLog();
    const run = await cal(['continue', handle, '--json', '--events', ...TIMEOUT, 'What was the codeword, again?']);
    expect(run.code).toBe(0);
    expect(run.json.turn.answer).toBe('The codeword was KIWI.');
    expect(eventsOf(run)).toEqual(['lost_tmux', 'resuming', 'running', 'completed']);

    const after = await inspect();
    expect(after.panes).toHaveLength(2);
    expect(after.panes[0]).toMatchObject({ launch: 'resume', endedAt: null });
    expect(after.panes[1].endedAt).not.toBeNull();
    expect(after.provider.nativeSessionId).toBe(before.provider.nativeSessionId);
    expect(after.provider.transcript.path).toBe(before.provider.transcript.path);
    expect((await fs.stat(after.provider.transcript.path)).size).toBeGreaterThan(sizeBefore);
    expect(await listSessions(h.configDir)).toEqual([after.provider.transcript.path]);
    expect((await readSession(after.provider.transcript.path)).filter((r) => r.type === 'session')).toHaveLength(1);

    const requests = server.turnRequests();
    expect(requests).toHaveLength(1);
    expect(requests[0]!.userMessages).toEqual(['Remember the codeword KIWI.', 'What was the codeword?', 'What was the codeword, again?']);
  });

  it('a shell tool turn lists the bash call; a multi-line message with a leading "-", quotes and $(…) reaches Pi whole, in argv and pasted', async () => {
    const shell = await cal(['continue', handle, '--json', ...TIMEOUT, 'Run it [[cal:shell=echo hello-from-pi]]']);
    expect(shell.code).toBe(0);
    expect(shell.json.turn.answer).toBe('Tool finished: hello-from-pi');
    expect(shell.json.turn.tools).toEqual([{ kind: 'shell', name: 'echo hello-from-pi', input: { command: 'echo hello-from-pi' }, output: 'hello-from-pi\n', status: 'completed' }]);

    const body = `-dash first [[cal:echo]]\nline "two" $(touch /tmp/cal-pi-pwned) \`uname\`\nünïcødé ✓`;
    const pasted = await cal(['continue', handle, '--json', ...TIMEOUT, '-'], body);
    expect(pasted.code).toBe(0);
    expect(pasted.json.turn.status).toBe('completed');
    expect((await cal(['kill-tmux', handle])).code).toBe(0);
    const launched = await cal(['continue', handle, '--json', ...TIMEOUT, '-'], `${body}\nresumed`);
    expect(launched.code).toBe(0);
    expect(launched.json.turn.status).toBe('completed');
    const users = (await readSession((await inspect()).provider.transcript.path))
      .filter((r) => r.type === 'message' && r.message.role === 'user')
      .map((r) => r.message.content.map((c: { text?: string }) => c.text ?? '').join(''));
    expect(users.at(-2)).toBe(body);
    expect(users.at(-1)?.trim()).toBe(`${body}\nresumed`);
    expect(existsSync('/tmp/cal-pi-pwned')).toBe(false);
  });

  it('a scripted HTTP 500 is turn_failed (10) with Pi\'s error text and no answer; the session goes on', async () => {
    server.clearLog();
    const run = await cal(['continue', handle, '--json', ...TIMEOUT, 'This one fails [[cal:http=500]]']);
    expect(run.code).toBe(10);
    expect(run.json.turn).toMatchObject({ status: 'failed', answer: null });
    expect(run.json.error.kind).toBe('turn_failed');
    expect(run.json.error.message).toContain('500 Mock internal server error');
    // Retries are off in this Pi config: one request.
    expect(server.turnRequests()).toHaveLength(1);
    const ok = await cal(['continue', handle, ...TIMEOUT, 'What was the codeword?']);
    expect(ok.code).toBe(0);
    expect(ok.stdout.trim()).toBe('The codeword was KIWI.');
  });

  it('a pasted message starting with "!" or "/" is text for the model, never a shell command or a slash command', async () => {
    const marker = path.join(work, 'pi-bang-ran');
    const bang = await cal(['continue', handle, '--json', ...TIMEOUT, `!touch ${marker}`]);
    expect(bang.code, bang.stdout).toBe(0);
    expect(bang.json.turn.status).toBe('completed');
    expect(existsSync(marker)).toBe(false);
    const slash = await cal(['continue', handle, '--json', ...TIMEOUT, '/quit']);
    expect(slash.code, slash.stdout).toBe(0);
    expect((await inspect()).currentPaneAlive).toBe(true);
    const last = server.turnRequests().at(-1)!;
    expect(last.lastUserMessage).toContain('/quit');
  });

  it('a session file that is gone is resume_unavailable (9), never a fresh start', async () => {
    const view = await inspect();
    expect((await cal(['kill-tmux', handle])).code).toBe(0);
    await fs.rename(view.provider.transcript.path, `${view.provider.transcript.path}.moved`);
    server.clearLog();
    const run = await cal(['continue', handle, '--json', ...TIMEOUT, 'Are you there?']);
    expect(run.code).toBe(9);
    expect(run.json.error.kind).toBe('resume_unavailable');
    expect(server.turnRequests()).toHaveLength(0);
    expect(existsSync(view.provider.transcript.path)).toBe(false);
  });
});
