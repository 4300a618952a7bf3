import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sharedTmuxScenarios, TIMEOUT } from '../support/shared-scenarios.js';

/**
 * GitHub Copilot CLI acceptance: the real pinned binary (1.0.102) in real tmux against the
 * scripted model (BYOK, offline), driven through the built `cal` as a black box. The tests build
 * on each other (one logical session), so they run in order; the first scenarios are shared with
 * Codex and Pi (test/support/shared-scenarios.ts): start, paste, and start → kill-tmux →
 * continue recalling the codeword with one new user message in the model's log.
 */
async function readEvents(file: string): Promise<any[]> {
  return (await fs.readFile(file, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

async function listSessions(copilotHome: string): Promise<string[]> {
  const root = path.join(copilotHome, 'session-state');
  const out: string[] = [];
  for (const dir of await fs.readdir(root).catch(() => [] as string[])) {
    const file = path.join(root, dir, 'events.jsonl');
    if (existsSync(file)) out.push(file);
  }
  return out.sort();
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('GitHub Copilot CLI in tmux, end to end', () => {
  const session = sharedTmuxScenarios({
    provider: 'copilot',
    prefix: 'copilot-e2e',
    where: 'a fresh folder (folder trust pre-answered in the managed home)',
    async prepare(suite) {
      return { work: suite.work };
    },
    nativeId: UUID,
    turnKey: UUID,
    async checkStart(view, { suite, work }) {
      const file = view.provider.transcript.path as string;
      expect(file).toBe(path.join(suite.configDir, 'session-state', view.provider.nativeSessionId, 'events.jsonl'));
      const records = await readEvents(file);
      expect(records[0]).toMatchObject({ type: 'session.start', data: { sessionId: view.provider.nativeSessionId, context: { cwd: work } } });
      // The trust entry cal wrote in the home it manages, for exactly this folder.
      const config = await fs.readFile(path.join(suite.configDir, 'config.json'), 'utf8');
      expect(JSON.parse(config.replace(/^\s*\/\/.*$/gm, '')).trustedFolders).toEqual([work]);
      // The model saw the prompt behind Copilot's clock, and cal matched it all the same.
      const users = records.filter((r) => r.type === 'user.message');
      expect(users).toHaveLength(1);
      expect(users[0].data.content).toBe('Remember the codeword KIWI.');
      expect(users[0].data.transformedContent).toMatch(/^<current_datetime>[^<]+<\/current_datetime>\n\nRemember the codeword KIWI\.$/);
    },
    transcripts: listSessions,
    readTranscript: readEvents,
    headerType: 'session.start',
  });
  const { cal, inspect } = session;

  it('a shell tool turn lists the bash call; a multi-line message with a leading "-" reaches Copilot whole, in argv and pasted', async () => {
    const shell = await cal(['continue', session.handle, '--json', ...TIMEOUT, 'Run it [[cal:shell=echo hello-from-copilot]]']);
    expect(shell.code, shell.stdout).toBe(0);
    expect(shell.json.turn.answer).toBe('Tool finished: hello-from-copilot');
    expect(shell.json.turn.tools).toMatchObject([{ kind: 'shell', name: 'echo hello-from-copilot', status: 'completed' }]);
    expect(shell.json.turn.tools[0].output).toContain('hello-from-copilot');

    const body = `-dash first [[cal:echo]]\nline "two" $(touch /tmp/cal-copilot-pwned) \`uname\`\nünïcødé ✓`;
    const pasted = await cal(['continue', session.handle, '--json', ...TIMEOUT, '-'], { input: body });
    expect(pasted.code, pasted.stdout).toBe(0);
    expect(pasted.json.turn.status).toBe('completed');
    expect((await cal(['kill-tmux', session.handle])).code).toBe(0);
    const launched = await cal(['continue', session.handle, '--json', ...TIMEOUT, '-'], { input: `${body}\nresumed` });
    expect(launched.code, launched.stdout).toBe(0);
    expect(launched.json.turn.status).toBe('completed');
    const users = (await readEvents((await inspect()).provider.transcript.path)).filter((r) => r.type === 'user.message').map((r) => r.data.content);
    expect(users.at(-2)).toBe(body);
    expect(users.at(-1)).toBe(`${body}\nresumed`);
    expect(existsSync('/tmp/cal-copilot-pwned')).toBe(false);
  });

  it('a scripted HTTP 400 is turn_failed (10) with Copilot\'s error text and no answer; the session goes on', async () => {
    const run = await cal(['continue', session.handle, '--json', ...TIMEOUT, 'This one fails [[cal:http=400]]']);
    expect(run.code, run.stdout).toBe(10);
    expect(run.json.turn).toMatchObject({ status: 'failed', answer: null });
    expect(run.json.error.message).toContain('400 Mock error 400');
    const ok = await cal(['continue', session.handle, ...TIMEOUT, 'What was the codeword?']);
    expect(ok.code).toBe(0);
    expect(ok.stdout.trim()).toBe('The codeword was KIWI.');
  });

  it('a session whose event log is gone is resume_unavailable (9), never a fresh start', async () => {
    const view = await inspect();
    expect((await cal(['kill-tmux', session.handle])).code).toBe(0);
    await fs.rename(view.provider.transcript.path, `${view.provider.transcript.path}.moved`);
    session.suite.server.clearLog();
    const run = await cal(['continue', session.handle, '--json', ...TIMEOUT, 'Are you there?']);
    expect(run.code).toBe(9);
    expect(run.json.error.kind).toBe('resume_unavailable');
    expect(session.suite.server.turnRequests()).toHaveLength(0);
  });
});
