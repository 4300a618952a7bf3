import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sharedTmuxScenarios, TIMEOUT } from '../support/shared-scenarios.js';

/**
 * Pi acceptance: the real pinned Pi binary (1.6.0) in real tmux against the scripted model,
 * driven through the built `cal` as a black box. The tests build on each other (one logical
 * session), so they run in order; the first scenarios are shared with Codex
 * (test/support/shared-scenarios.ts). The Pi agent dir (models.json with a `mock` provider,
 * retries off) stands for the user's own Pi config: cal must use it as it is.
 */
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
  const userConfig: Record<string, string> = {};

  const session = sharedTmuxScenarios({
    provider: 'pi',
    prefix: 'pi-e2e',
    where: 'a fresh folder',
    async prepare(suite) {
      for (const f of ['models.json', 'settings.json']) userConfig[f] = await fs.readFile(path.join(suite.configDir, f), 'utf8');
      return { work: suite.work };
    },
    nativeId: /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    turnKey: /^[0-9a-f]{8}$/,
    async checkStart(view, { suite, work }) {
      const file = view.provider.transcript.path as string;
      expect(path.dirname(file)).toBe(path.join(suite.configDir, 'sessions', `--${work.slice(1).replace(/\//g, '-')}--`));
      const records = await readSession(file);
      expect(records[0]).toMatchObject({ type: 'session', id: view.provider.nativeSessionId, cwd: work });
      // cal wrote nothing into the user's Pi config. (Pi itself records `lastChangelogVersion` in
      // settings.json on its first interactive start; nothing else changes.)
      for (const [f, text] of Object.entries(userConfig)) {
        const now = JSON.parse(await fs.readFile(path.join(suite.configDir, f), 'utf8'));
        delete now.lastChangelogVersion;
        expect(now).toEqual(JSON.parse(text));
      }
    },
    transcripts: listSessions,
    readTranscript: readSession,
    headerType: 'session',
  });
  const { cal, inspect } = session;

  it('a shell tool turn lists the bash call; a multi-line message with a leading "-", quotes and $(…) reaches Pi whole, in argv and pasted', async () => {
    const shell = await cal(['continue', session.handle, '--json', ...TIMEOUT, 'Run it [[cal:shell=echo hello-from-pi]]']);
    expect(shell.code).toBe(0);
    expect(shell.json.turn.answer).toBe('Tool finished: hello-from-pi');
    expect(shell.json.turn.tools).toEqual([{ kind: 'shell', name: 'echo hello-from-pi', input: { command: 'echo hello-from-pi' }, output: 'hello-from-pi\n', status: 'completed' }]);

    const body = `-dash first [[cal:echo]]\nline "two" $(touch /tmp/cal-pi-pwned) \`uname\`\nünïcødé ✓`;
    const pasted = await cal(['continue', session.handle, '--json', ...TIMEOUT, '-'], { input: body });
    expect(pasted.code).toBe(0);
    expect(pasted.json.turn.status).toBe('completed');
    expect((await cal(['kill-tmux', session.handle])).code).toBe(0);
    const launched = await cal(['continue', session.handle, '--json', ...TIMEOUT, '-'], { input: `${body}\nresumed` });
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
    session.suite.server.clearLog();
    const run = await cal(['continue', session.handle, '--json', ...TIMEOUT, 'This one fails [[cal:http=500]]']);
    expect(run.code).toBe(10);
    expect(run.json.turn).toMatchObject({ status: 'failed', answer: null });
    expect(run.json.error.kind).toBe('turn_failed');
    // 0.73.1 wrote `500 Mock internal server error`; 1.x writes the status and the JSON body.
    expect(run.json.error.message).toMatch(/500(?: |: \{"message":")Mock internal server error/);
    // Retries are off in this Pi config: one request.
    expect(session.suite.server.turnRequests()).toHaveLength(1);
    const ok = await cal(['continue', session.handle, ...TIMEOUT, 'What was the codeword?']);
    expect(ok.code).toBe(0);
    expect(ok.stdout.trim()).toBe('The codeword was KIWI.');
  });

  it('a pasted message starting with "!" or "/" is text for the model, never a shell command or a slash command', async () => {
    const marker = path.join(session.work, 'pi-bang-ran');
    const bang = await cal(['continue', session.handle, '--json', ...TIMEOUT, `!touch ${marker}`]);
    expect(bang.code, bang.stdout).toBe(0);
    expect(bang.json.turn.status).toBe('completed');
    expect(existsSync(marker)).toBe(false);
    const slash = await cal(['continue', session.handle, '--json', ...TIMEOUT, '/quit']);
    expect(slash.code, slash.stdout).toBe(0);
    expect((await inspect()).currentPaneAlive).toBe(true);
    const last = session.suite.server.turnRequests().at(-1)!;
    expect(last.lastUserMessage).toContain('/quit');
  });

  it('a session file that is gone is resume_unavailable (9), never a fresh start', async () => {
    const view = await inspect();
    expect((await cal(['kill-tmux', session.handle])).code).toBe(0);
    await fs.rename(view.provider.transcript.path, `${view.provider.transcript.path}.moved`);
    session.suite.server.clearLog();
    const run = await cal(['continue', session.handle, '--json', ...TIMEOUT, 'Are you there?']);
    expect(run.code).toBe(9);
    expect(run.json.error.kind).toBe('resume_unavailable');
    expect(session.suite.server.turnRequests()).toHaveLength(0);
    expect(existsSync(view.provider.transcript.path)).toBe(false);
  });
});
