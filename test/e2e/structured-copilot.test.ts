import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleFromStderr, interruptedCal } from '../support/cal.js';
import { cliSuite, pinnedVersion, type CliSuite } from '../support/cli-suite.js';

/**
 * GitHub Copilot CLI with `--transport structured`: the real pinned binary (1.0.102) in its own
 * JSON mode (`copilot --output-format=json`, one process per turn, the message on stdin) against
 * the scripted model (BYOK, offline). No pane anywhere. The tests build on one session and run in
 * order. Run under `flock /tmp/cal-realcli.lock`.
 */
const TIMEOUT = ['--timeout', '90'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(check: () => boolean, what: string, tries = 100): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function readEvents(file: string): Promise<any[]> {
  return (await fs.readFile(file, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

describe('GitHub Copilot CLI with --transport structured, end to end', () => {
  let s: CliSuite;
  let handle = '';
  const m1 = 'Remember the codeword PAPAYA.';
  const m2 = 'What was the codeword?';
  const inspect = () => s.inspect(handle);
  const lastUserMessages = () => s.server.turnRequests().at(-1)?.userMessages ?? [];

  beforeAll(async () => {
    s = await cliSuite('copilot', { prefix: 'copilot-structured' });
  });
  afterAll(async () => s?.close());

  it('start answers through copilot --output-format=json; the handle has the session id cal chose and its event log, no pane', async () => {
    const run = await s.cal(['start', '--provider', 'copilot', '--transport', 'structured', '--cwd', s.work, ...TIMEOUT, m1]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('OK, I will remember the codeword PAPAYA.');
    handle = handleFromStderr(run.stderr) ?? '';
    const view = await inspect();
    expect(view.provider).toMatchObject({ transport: 'structured', tmux: null, pendingSessionId: null, status: 'idle' });
    expect(view.panes).toEqual([]);
    expect(view.provider.cli.version).toBe(pinnedVersion('copilot'));
    // The native binary, not the npm loader: cancel's SIGINT reaches Copilot itself.
    expect(view.provider.cli.realPath).toMatch(/@github\/copilot-linux-[a-z0-9]+\/copilot$/);
    const id = view.provider.nativeSessionId as string;
    expect(id).toMatch(UUID);
    expect(view.provider.transcript.path).toBe(path.join(s.configDir, 'session-state', id, 'events.jsonl'));
    const users = (await readEvents(view.provider.transcript.path)).filter((r) => r.type === 'user.message');
    expect(users.map((u) => u.data.content)).toEqual([m1]);
  });

  it('continue resumes the same session with only the new message and recalls', async () => {
    const before = await inspect();
    s.server.clearLog();
    const run = await s.cal(['continue', handle, '--json', ...TIMEOUT, m2]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was PAPAYA.' });
    expect(s.server.turnRequests()).toHaveLength(1);
    expect(lastUserMessages().map((m) => m.replace(/^<current_datetime>[^<]*<\/current_datetime>\n\n/, ''))).toEqual([m1, m2]);
    const after = await inspect();
    expect(after.provider.nativeSessionId).toBe(before.provider.nativeSessionId);
    expect(after.provider.transcript.path).toBe(before.provider.transcript.path);
    expect((await readEvents(after.provider.transcript.path)).filter((r) => r.type === 'session.start')).toHaveLength(1);
  });

  it('messages reach Copilot exactly through stdin: 200 KB, a leading "-", quotes and newlines', async () => {
    const big = `Big one [[cal:reply=BIG-OK]]\n${'0123456789abcdef'.repeat(12_800)}`;
    const run = await s.cal(['continue', handle, '--json', ...TIMEOUT, '-'], { input: big });
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn.answer).toBe('BIG-OK');
    for (const text of ['-v is not a flag [[cal:echo]]', 'line "one" $(touch /tmp/cal-copilot-pwned)\n\tline two ✓ [[cal:echo]]']) {
      const r = await s.cal(['continue', handle, '--json', ...TIMEOUT, '-'], { input: text });
      expect(r.code, r.stderr).toBe(0);
      expect(r.json.turn.answer).toBe(text.replace(' [[cal:echo]]', ''));
    }
    const users = (await readEvents((await inspect()).provider.transcript.path)).filter((r) => r.type === 'user.message').map((r) => r.data.content);
    expect(users.slice(-3)).toEqual([big, '-v is not a flag [[cal:echo]]', 'line "one" $(touch /tmp/cal-copilot-pwned)\n\tline two ✓ [[cal:echo]]']);
  });

  it('a shell tool turn lists the bash call with its output', async () => {
    const run = await s.cal(['continue', handle, '--json', ...TIMEOUT, 'Run it [[cal:shell=echo hello-structured]]']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn.answer).toBe('Tool finished: hello-structured');
    expect(run.json.turn.tools).toMatchObject([{ kind: 'shell', name: 'echo hello-structured', status: 'completed' }]);
    expect(run.json.turn.tools[0].output).toContain('hello-structured');
  });

  it('a scripted HTTP 400 is turn_failed (10) with Copilot\'s error text; the session goes on', async () => {
    const failing = 'This one fails [[cal:http=400]]';
    s.server.clearLog();
    const run = await s.cal(['continue', handle, '--json', ...TIMEOUT, failing]);
    expect(run.code, run.stdout).toBe(10);
    expect(run.json.turn).toMatchObject({ status: 'failed', answer: null });
    expect(run.json.error).toMatchObject({ kind: 'turn_failed', message: expect.stringContaining('400 Mock error 400') });
    const next = await s.cal(['continue', handle, '--json', ...TIMEOUT, m2]);
    expect(next.code, next.stderr).toBe(0);
    expect(next.json.turn.answer).toBe('The codeword was PAPAYA.');
  });

  it('Ctrl-C during a turn, at a terminal (cal and copilot both get SIGINT) or to cal alone (its cancel): interrupted (11), sent once, and the session goes on', async () => {
    for (const group of [true, false]) {
      const message = `Interrupt me ${group ? 'at the terminal' : 'through cal'} [[cal:delay=8000]]`;
      s.server.clearLog();
      const aborts = async () => (await readEvents((await inspect()).provider.transcript.path)).filter((e) => e.type === 'abort').length;
      const abortsBefore = await aborts();
      const sent = () => s.server.turnRequests().some((r) => r.lastUserMessage.endsWith(message));
      const run = await interruptedCal(s.state, ['continue', handle, '--json', ...TIMEOUT, message], s.env, { group, running: async () => sent() });
      expect(run.code, run.stdout).toBe(11);
      expect(JSON.parse(run.stdout).turn).toMatchObject({ status: 'interrupted', answer: null });
      // Cancelled, not waited out: the scripted model would answer after 8 s.
      expect(run.ms).toBeLessThan(7000);
      expect(s.server.turnRequests().filter((r) => r.lastUserMessage.endsWith(message))).toHaveLength(1);
      // Copilot exits right after its closing `result` line; a pid cal kept to wait for is gone soon.
      const pid = ((await inspect()).provider.cliProcess as { pid: number } | null)?.pid;
      if (pid) await until(() => !alive(pid), `copilot ${pid} to exit`);
      // Copilot itself stopped the turn (its own `abort` record), not only cal.
      expect(await aborts()).toBe(abortsBefore + 1);
    }
    const next = await s.cal(['continue', handle, '--json', ...TIMEOUT, m2]);
    expect(next.code, next.stderr).toBe(0);
    expect(next.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was PAPAYA.' });
  });

  it('cal killed mid-turn: once Copilot finished, cal recover settles the turn from the event log and sends nothing', async () => {
    const message = 'Recover me [[cal:delay=2500]]';
    s.server.clearLog();
    const owner = s.spawnCal(['continue', handle, ...TIMEOUT, message]);
    await until(() => s.server.turnRequests().some((r) => r.lastUserMessage === message), 'the model to get the message', 600);
    owner.child.kill('SIGKILL');
    await owner.done;
    const file = (await inspect()).provider.transcript.path as string;
    // The orphaned copilot ends the turn in its event log (its stdout is a file, not a pipe).
    for (let i = 0; i < 200 && !(await readEvents(file)).some((r) => r.type === 'assistant.message' && r.data.content === 'Received: Recover me'); i++) await new Promise((r) => setTimeout(r, 50));
    const rec = await s.cal(['recover', '--json']);
    expect(rec.code, rec.stdout + rec.stderr).toBe(0);
    expect(rec.json.turns).toEqual([expect.objectContaining({ handle, before: 'running', action: 'settled_from_transcript', status: 'completed', answer: 'Received: Recover me' })]);
    expect(s.server.turnRequests().filter((r) => r.lastUserMessage === message)).toHaveLength(1);
  });

  it('when the event log is gone, continue is resume_unavailable (9), never a fresh start', async () => {
    const file = (await inspect()).provider.transcript.path as string;
    await fs.rename(file, `${file}.moved`);
    try {
      s.server.clearLog();
      const run = await s.cal(['continue', handle, '--json', ...TIMEOUT, 'Are you there?']);
      expect(run.code).toBe(9);
      expect(run.json.error.kind).toBe('resume_unavailable');
      expect(s.server.turnRequests()).toEqual([]);
    } finally {
      await fs.rename(`${file}.moved`, file);
    }
  });
});
