import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleFromStderr } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { calBin } from '../support/clis.js';

/**
 * Issue 52 §1: the inspect TUI acts. The built cal runs `cal inspect` in a pane of a tmux server
 * of this test's own (not cal's), on a real terminal; the test presses keys with send-keys and
 * reads what a person would see with capture-pane, while the real Claude Code binary (against
 * the scripted model) runs the sessions. Every action is checked against cal's own records too.
 */
describe('cal inspect on a terminal: s, c, k, d, n and / act on real sessions', () => {
  let suite: CliSuite;
  let socket = '';
  let exitFile = '';
  let first = '';
  let second = '';

  const tmux = (args: string[]) => execa('tmux', ['-S', socket, '-f', '/dev/null', ...args], { env: suite.env, extendEnv: false, reject: false });
  const screen = async () => (await tmux(['capture-pane', '-p', '-t', 'tui'])).stdout;
  const keys = (...k: string[]) => tmux(['send-keys', '-t', 'tui', ...k]);
  /** Typed text, sent as it is (no key names), then a pause as a person makes before Enter. */
  const type = async (text: string) => {
    await tmux(['send-keys', '-t', 'tui', '-l', text]);
    await new Promise((r) => setTimeout(r, 300));
  };

  async function waitFor(check: (s: string) => boolean, what: string, timeoutMs = 60_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    let s = '';
    while (Date.now() < deadline) {
      s = await screen();
      if (check(s)) return s;
      await new Promise((r) => setTimeout(r, 150));
    }
    throw new Error(`the screen never showed ${what}; it shows:\n${s}`);
  }

  /**
   * A key, and its effect on the screen. Pressed once: a key read while the view redraws still
   * reaches what is open (key-reader.ts, overlay-keys.ts), so a second press would only hide a
   * lost key (it hid a stale "busy" after an answer, fixed since).
   */
  async function press(key: string, check: (s: string) => boolean, what: string, timeoutMs = 60_000): Promise<string> {
    await keys(key);
    return waitFor(check, what, timeoutMs);
  }

  beforeAll(async () => {
    suite = await cliSuite('claude-code', { prefix: 'inspect-act' });
    const settings = path.join(suite.configDir, 'settings.json');
    await fs.mkdir(path.dirname(settings), { recursive: true });
    await fs.writeFile(settings, JSON.stringify({ permissions: { allow: ['Bash'] }, skipDangerousModePermissionPrompt: true }), { mode: 0o600 });
    socket = path.join(suite.root, 'viewer.sock');
    exitFile = path.join(suite.root, 'inspect.exit');
    const start = await suite.cal(['start', '--provider', 'claude-code', '--cwd', suite.work, '--name', 'first', 'Remember the codeword TANGO.']);
    expect(start.code).toBe(0);
    first = handleFromStderr(start.stderr) ?? '';
    // The TUI in a terminal of its own, started in the working directory (n offers it).
    const run = `cd "$1" && node "$2" --state-dir "$3" inspect; echo $? > "$4"`;
    const started = await tmux(['new-session', '-d', '-s', 'tui', '-x', '160', '-y', '50', '--', 'sh', '-c', run, 'sh', suite.work, calBin, suite.state, exitFile]);
    expect(started.exitCode).toBe(0);
    await tmux(['set-option', '-g', 'remain-on-exit', 'on']);
  });

  afterAll(async () => {
    if (socket) await tmux(['kill-server']);
    await suite?.close();
  });

  it('the footer lists the keys', async () => {
    const s = await waitFor((x) => x.includes(`› ${first}`), 'the handle list');
    expect(s).toContain('cal inspect · 1 handle');
    expect(s).toContain('s send · c cancel · k kill pane · d remove · n new · a attach · / filter');
    expect(s).toContain('↑/↓ move · enter open · r refresh · q quit');
  });

  it('s sends a message: its progress (running, the tool) and then its answer show in the view; meanwhile the session says it is busy', async () => {
    await press('s', (x) => x.includes(`message to ${first} (first):`), 'the message input');
    await type('Spin please [[cal:shell=sleep 6; echo SPIN-OUT]]');
    await keys('Enter');
    const running = await waitFor((x) => new RegExp(`… ${first} t0002-\\S+ running · \\d+s · 1 tool · ⚙ shell sleep 6; echo SPIN-OUT`).test(x), 'the turn running its tool');
    expect(running).toContain('(sent: Spin please [[cal:shell=sleep 6;');
    await press('s', (x) => new RegExp(`${first} \\(first\\) is busy: turn t0002-\\S+ is in flight \\(c cancels it\\)`).test(x), 'the busy notice');
    const done = await waitFor((x) => x.includes(`✓ answer from ${first} t0002-`), 'the answer', 90_000);
    expect(done).toContain('Tool finished: SPIN-OUT');
    // Sent through the library: cal's records hold the turn, completed with that answer.
    const view = await suite.inspect(first);
    expect(view.turns.map((t: { status: string; answer: string }) => [t.status, t.answer])).toEqual([
      ['completed', 'OK, I will remember the codeword TANGO.'],
      ['completed', 'Tool finished: SPIN-OUT'],
    ]);
  });

  it('d on a session with a turn in flight is refused with the error cal remove prints, on one line; c cancels the turn', async () => {
    await press('s', (x) => x.includes(`message to ${first} (first):`), 'the message input');
    await type('Hold on [[cal:shell=timeout 90 tail -f /dev/null; echo LATE]]');
    await keys('Enter');
    await waitFor((x) => new RegExp(`… ${first} t0003-\\S+ running .*⚙ shell timeout 90 tail -f /dev/null`).test(x), 'the long turn running');
    await press('d', (x) => x.includes(`remove ${first} (first)?`) && x.includes('(y/n)'), 'the remove question');
    await keys('y');
    await waitFor((x) => x.includes(`cal: busy: handle ${first} is busy: another cal process is running a turn on it`), 'the busy error');
    const cancelled = await press('c', (x) => /cancelled turn t0003-\S+: interrupted/.test(x), 'the cancel line', 30_000);
    expect(cancelled).toMatch(new RegExp(`✗ ${first} t0003-\\S+: cal: interrupted: the turn was interrupted`));
    const view = await suite.inspect(first);
    expect(view.turns.at(-1).status).toBe('interrupted');
  });

  it('k kills the pane; the session survives: the next s resumes it natively, with its memory', async () => {
    await press('k', (x) => x.includes(`killed the pane of ${first}: the session survives`), 'the kill line');
    await waitFor((x) => new RegExp(`› ${first}\\s+first\\s+claude-code\\s+tmux gone`).test(x), 'the pane gone in the list');
    expect((await suite.inspect(first)).currentPaneAlive).toBe(false);
    // In the detail view this time.
    await press('Enter', (x) => x.includes(`handle ${first} (first)`) && x.includes('esc list'), 'the detail view');
    await press('s', (x) => x.includes(`message to ${first} (first):`), 'the message input');
    await type('What was the codeword?');
    await keys('Enter');
    const answered = await waitFor((x) => x.includes(`✓ answer from ${first} t0004-`), 'the answer after the resume', 90_000);
    expect(answered).toContain('The codeword was TANGO.');
    expect((await suite.inspect(first)).currentPaneAlive).toBe(true);
    await press('Escape', (x) => x.includes('enter open'), 'the list again');
  });

  it('n starts a new session from provider, directory and first message; its answer shows', async () => {
    const form = await press('n', (x) => x.includes('new session (cal start)'), 'the new-session form');
    expect(form).toContain('provider  claude-code');
    expect(form).toContain(`directory ${suite.work}`);
    await keys('Enter');
    await new Promise((r) => setTimeout(r, 300));
    await keys('Enter');
    await new Promise((r) => setTimeout(r, 300));
    await type('Remember the codeword ALPHA.');
    await keys('Enter');
    const done = await waitFor((x) => /✓ answer from [a-z0-9]+ t0001-/.test(x) && x.includes('cal inspect · 2 handles'), 'the new session answered', 120_000);
    second = /✓ answer from ([a-z0-9]+) t0001-/.exec(done)![1]!;
    expect(second).not.toBe(first);
    expect(done).toContain('OK, I will remember the codeword ALPHA.');
    const view = await suite.inspect(second);
    expect(view.provider.provider).toBe('claude-code');
    expect(view.config.workingDir.realPath).toBe(suite.work);
  });

  it('/ filters the list; d asks y/n: n keeps the session, y removes it', async () => {
    await press('/', (x) => x.includes('filter:'), 'the filter input');
    await type(second);
    await waitFor((x) => x.includes(`cal inspect · 1 of 2 handles matching "${second}"`) && x.includes(`› ${second}`) && !x.includes(`${first} `), 'the filtered list');
    // Enter and d in one send-keys, as keys typed while the view is busy come in one read: the
    // d reaches the list once the filter is closed (key-reader.ts), not the filter's text.
    await keys('Enter', 'd');
    await waitFor((x) => x.includes(`remove ${second}?`) && x.includes('(y/n)') && !x.includes('filter:'), 'the remove question');
    await keys('n');
    await waitFor((x) => x.includes(`kept ${second}`), 'kept');
    expect((await suite.cal(['inspect', second, '--json'])).code).toBe(0);
    await press('d', (x) => x.includes(`remove ${second}?`), 'the remove question');
    await keys('y');
    await waitFor((x) => x.includes(`removed: ${second}`) && x.includes('No handle matches the filter'), 'removed');
    expect((await suite.cal(['inspect', second, '--json'])).code).toBe(3);
    // Esc in the filter clears it.
    await press('/', (x) => x.includes(`filter: ${second}`), 'the filter input');
    await keys('Escape');
    await waitFor((x) => x.includes('cal inspect · 1 handle') && x.includes(`› ${first}`), 'the whole list');
    await keys('q');
    const deadline = Date.now() + 15_000;
    let code: string | null = null;
    while (code === null && Date.now() < deadline) {
      code = await fs.readFile(exitFile, 'utf8').catch(() => null);
      if (code === null) await new Promise((r) => setTimeout(r, 100));
    }
    expect(code?.trim()).toBe('0');
  });
});
