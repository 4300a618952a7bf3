import fs from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleFromStderr } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { calBin } from '../support/clis.js';

/**
 * Issue 9: `cal inspect` run by a person. The real Claude Code binary builds a handle with one
 * archived pane (killed) and one current pane (native resume); then the built cal runs inside
 * a pane of a tmux server of this test's own (not cal's, not the default), and the test reads
 * what a person would see with capture-pane. The same server gives `cal continue` a terminal,
 * to watch its spinner and to prove it never loads Ink or React.
 */

// A module-loading recorder for `node --import`: every ESM resolution (hooks thread) and every
// CommonJS require (main thread) is appended to $CAL_TEST_LOAD_LOG.
const REGISTER = `import fs from 'node:fs';
import Module, { register } from 'node:module';
const log = process.env.CAL_TEST_LOAD_LOG;
register('./load-hooks.mjs', import.meta.url, { data: { log } });
const load = Module._load;
Module._load = function (request, ...rest) {
  fs.appendFileSync(log, 'require ' + request + '\\n');
  return load.call(this, request, ...rest);
};
`;
const HOOKS = `import fs from 'node:fs';
let log;
export async function initialize(data) { log = data.log; }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  fs.appendFileSync(log, 'import ' + specifier + ' ' + result.url + '\\n');
  return result;
}
`;

const INK_OR_REACT = /(^|\s)(ink|react|react-reconciler|ink-[a-z-]+)(\/\S*)?(\s|$)|node_modules\/(ink|react|react-reconciler)\//m;

describe('cal inspect in a real terminal, and cal continue without Ink', () => {
  let suite: CliSuite;
  let root: string;
  let state: string;
  let work: string;
  let env: Record<string, string>;
  let handle = '';
  let viewerSocket = '';
  let register = '';

  const cal = (args: string[]) => suite.cal(args);
  const viewer = (args: string[]) => execa('tmux', ['-S', viewerSocket, '-f', '/dev/null', ...args], { env, extendEnv: false, reject: false });
  /** What the pane shows; with history, also what scrolled off its top. */
  const capture = async (target: string, opts: { escapes?: boolean; history?: boolean } = {}) =>
    (await viewer(['capture-pane', '-p', ...(opts.escapes ? ['-e'] : []), ...(opts.history ? ['-S', '-200'] : []), '-t', target])).stdout;
  /** The exit status of a cal run started by calInPane (written by its shell when cal ends). */
  async function exitOf(logFile: string): Promise<string> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const status = await fs.readFile(`${logFile}.exit`, 'utf8').catch(() => null);
      if (status !== null) return status.trim();
      if (Date.now() > deadline) return 'still running';
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async function waitForScreen(
    target: string,
    check: (screen: string) => boolean,
    what: string,
    timeoutMs = 30_000,
    opts: { escapes?: boolean; history?: boolean } = {},
  ): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    let screen = '';
    while (Date.now() < deadline) {
      screen = await capture(target, opts);
      if (check(screen)) return screen;
      await new Promise((r) => setTimeout(r, 150));
    }
    throw new Error(`the screen never showed ${what}; it shows:\n${screen}`);
  }

  /** argv for a cal run in a viewer pane, recording what it loads into logFile and its exit status. */
  const calInPane = (logFile: string, args: string[]) => [
    'sh', '-c', 'log=$1; hook=$2; shift 2; CAL_TEST_LOAD_LOG="$log" node --import "$hook" "$@"; echo $? > "$log.exit"',
    'sh', logFile, register, calBin, '--state-dir', state, ...args,
  ];

  beforeAll(async () => {
    suite = await cliSuite('claude-code', { prefix: 'inspect-e2e' });
    ({ root, state, work, env } = suite);
    const settings = path.join(suite.configDir, 'settings.json');
    await fs.mkdir(path.dirname(settings), { recursive: true });
    await fs.writeFile(settings, JSON.stringify({ permissions: { allow: ['Bash'] }, skipDangerousModePermissionPrompt: true }), { mode: 0o600 });
    viewerSocket = path.join(root, 'viewer.sock');
    await fs.writeFile(path.join(root, 'load-hooks.mjs'), HOOKS);
    await fs.writeFile(path.join(root, 'load-register.mjs'), REGISTER);
    register = pathToFileURL(path.join(root, 'load-register.mjs')).href;
  });

  afterAll(async () => {
    await viewer(['kill-server']);
    await suite?.close();
  });

  it('builds a handle with one archived and one current pane', async () => {
    const start = await cal(['start', '--provider', 'claude-code', '--cwd', work, '--name', 'viewed', 'Remember the codeword TANGO.']);
    expect(start.code).toBe(0);
    handle = handleFromStderr(start.stderr) ?? '';
    expect((await cal(['kill-tmux', handle])).code).toBe(0);
    const again = await cal(['continue', handle, 'What was the codeword?']);
    expect(again.code).toBe(0);
    expect(again.stdout.trim()).toBe('The codeword was TANGO.');
    const view = (await cal(['inspect', handle, '--json'])).json;
    expect(view.panes).toHaveLength(2);
    expect(view.currentPaneAlive).toBe(true);
  });

  it('without a terminal: plain text and JSON with the same information, screen and attach included', async () => {
    const text = await cal(['inspect', handle]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^handle {5}[a-z0-9]+ \(viewed\)$/m);
    expect(text.stdout).toMatch(/^certified  none recorded \(see cal certify\)$/m);
    expect(text.stdout).toMatch(/^ {2}current  cal-\S+ %\d+ resume .* \(alive\)$/m);
    expect(text.stdout).toMatch(/^ {2}archived cal-\S+ %\d+ fresh .* ended \S+: pane gone$/m);
    expect(text.stdout).toMatch(/^screen of cal-\S+ %\d+ \(last 15 lines\)$/m);
    expect(text.stdout).toMatch(/^attach {5}tmux -S \S+ attach-session -t =cal-\S+$/m);
    expect(text.stdout).toMatch(/^ {2}\S+ lost_tmux \S+ pane=%\d+$/m);
    expect(text.stdout).toMatch(/^ {2}t0002-\S+ completed \(\d+[smhd] ago\): The codeword was TANGO\.$/m);

    const json = (await cal(['inspect', handle, '--json'])).json;
    expect(typeof json.screen).toBe('string');
    expect(json.attach.slice(0, 2)).toEqual(['tmux', '-S']);
    expect(json.turns).toHaveLength(2);
    expect(json.events.map((e: { event: string }) => e.event)).toEqual(['running', 'completed', 'pane_killed', 'lost_tmux', 'resuming', 'running', 'completed']);

    const list = await cal(['inspect']);
    expect(list.stdout.split('\n')[0]).toMatch(/^HANDLE +NAME +PROVIDER +CLI +TRANSPORT +PANE +STATUS +LAST TURN +UPDATED +CWD$/);
    expect(list.stdout).toMatch(new RegExp(`^${handle} +viewed +claude-code +2\\.1\\.328 +tmux +alive +idle +completed +\\S+ +\\S+$`, 'm'));

    // None of these loaded Ink or React (recorded with the same loader hook as below).
    const log = path.join(root, 'plain-inspect-loads.log');
    for (const args of [['inspect', handle], ['inspect', handle, '--json'], ['inspect']]) {
      const [cmd, ...rest] = calInPane(log, args);
      await fs.rm(`${log}.exit`, { force: true });
      const run = await execa(cmd!, rest, { env, extendEnv: false, reject: false, stdin: 'ignore' });
      expect(run.stdout).toContain(handle);
      expect(await exitOf(log)).toBe('0');
    }
    const loads = await fs.readFile(log, 'utf8');
    // The inspect command's own chunk of the bundled entry (dist/bin/inspect-<hash>.cjs).
    expect(loads).toMatch(/(import|require) \.\/inspect-[\w-]+\.c?js/);
    expect(loads).not.toMatch(INK_OR_REACT);
  });

  it('on a terminal: the TUI shows identity, the live current pane with its screen, the archived pane, turns and events', async () => {
    const log = path.join(root, 'inspect-loads.log');
    const started = await viewer(['new-session', '-d', '-s', 'viewer', '-x', '160', '-y', '50', '--', ...calInPane(log, ['inspect', handle])]);
    expect(started.exitCode).toBe(0);
    await viewer(['set-option', '-g', 'remain-on-exit', 'on']);
    const screen = await waitForScreen('viewer', (s) => s.includes('archived panes (1)') && s.includes('● alive') && s.includes('events (UTC)'), 'the detail view');
    expect(screen).toContain(`handle ${handle} (viewed) · chat`);
    expect(screen).toContain('provider   claude-code via tmux · model (CLI default)');
    expect(screen).toMatch(/CLI {8}2\.1\.328 at \S+claude\.exe/);
    expect(screen).toContain('certified  none recorded (see cal certify)');
    expect(screen).toMatch(/current pane cal-\S+ %\d+ \(resume, started \d+[sm] ago\) ● alive/);
    expect(screen).toMatch(/cal-\S+ %\d+ \(fresh\) · started \d+[sm] ago · ended \d+[sm] ago \(\d\d:\d\d:\d\d\): pane gone/);
    // The live preview: Claude Code's own screen, framed, showing the resumed conversation.
    const framed = screen.split('\n').filter((l) => l.startsWith('│'));
    expect(framed.join('\n')).toContain('The codeword was TANGO.');
    expect(screen).toMatch(/t0001-\S+ completed\s+Remember the codeword TANGO\. → OK, I will remember the codeword TANGO\./);
    expect(screen).toMatch(/t0002-\S+ completed\s+What was the codeword\? → The codeword was TANGO\./);
    expect(screen).toMatch(/\d\d:\d\d:\d\d lost_tmux t0002-\S+ pane=%\d+/);
    expect(screen).toMatch(/\d\d:\d\d:\d\d resuming t0002-\S+ nativeSessionId=[0-9a-f-]{36}/);
    expect(screen).toContain('a attach (detach with C-b d) · esc list · r refresh · q quit');
    // The positive control for the module recorder: the TUI did load Ink and React.
    expect(await fs.readFile(log, 'utf8')).toMatch(INK_OR_REACT);
  });

  it('a attaches the terminal to the live pane with tmux attach, and the TUI comes back on detach', async () => {
    const log = path.join(root, 'inspect-loads.log'); // the TUI started by the previous test
    const attach: string[] = (await cal(['inspect', handle, '--json'])).json.attach;
    const [, , calSocket, , , target] = attach;
    // Attached: the viewer's terminal now shows Claude Code itself, not the TUI. On a heavily
    // loaded machine a key can arrive while Ink redraws and be lost, as for a person at the
    // keyboard, who presses it again: so does the test, once.
    const attached = (s: string) => !s.includes('esc list') && s.includes('The codeword was TANGO.');
    await viewer(['send-keys', '-t', 'viewer', 'a']);
    try {
      await waitForScreen('viewer', attached, 'the attached pane', 10_000);
    } catch {
      await viewer(['send-keys', '-t', 'viewer', 'a']);
      await waitForScreen('viewer', attached, 'the attached pane');
    }
    const clients = await execa('tmux', ['-S', calSocket!, 'list-clients', '-F', '#{session_name}'], { reject: false });
    expect(clients.stdout.trim()).toBe(target!.replace(/^=/, ''));
    await execa('tmux', ['-S', calSocket!, 'detach-client', '-s', target!], { reject: false });
    await waitForScreen('viewer', (s) => s.includes('esc list') && s.includes('● alive'), 'the TUI again');
    // Back in the list with Esc, then q quits with status 0.
    await viewer(['send-keys', '-t', 'viewer', 'Escape']);
    await waitForScreen('viewer', (s) => s.includes('cal inspect · 1 handle') && s.includes('enter open'), 'the handle list');
    const listed = await capture('viewer');
    expect(listed).toMatch(new RegExp(`› ${handle}\\s+viewed\\s+claude-code\\s+tmux alive\\s+idle\\s+completed \\d+[sm]\\s+\\S+`));
    await viewer(['send-keys', '-t', 'viewer', 'q']);
    expect(await exitOf(log)).toBe('0');
  });

  it('cal continue on a terminal shows a spinner with the state and elapsed time, and never loads Ink or React', async () => {
    const log = path.join(root, 'continue-loads.log');
    const message = 'Spin please [[cal:shell=sleep 4; echo SPIN-OUT]]';
    await viewer(['new-window', '-t', 'viewer', '-n', 'cont', '--', ...calInPane(log, ['continue', handle, message])]);
    const spinning = await waitForScreen('viewer:cont', (s) => /running · [1-9]\d*s · tool sleep 4; echo SPIN-OUT/.test(s), 'the spinner on the tool call', 30_000, { escapes: true });
    // Coloured by default (ora's cyan spinner)…
    expect(spinning).toMatch(/\u001B\[36m/);
    // (the dead pane's notice can scroll the first lines off the top: read the history too)
    const done = await waitForScreen('viewer:cont', (s) => s.includes(`handle: ${handle}`), 'the end of the turn', 60_000, { history: true });
    expect(done).toContain('Tool finished: SPIN-OUT');
    expect(done).not.toMatch(/running · \d+s/); // the spinner line was cleared
    expect(await exitOf(log)).toBe('0');
    const loads = await fs.readFile(log, 'utf8');
    expect(loads).toMatch(/(import|require) \.\/continue-[\w-]+\.c?js/);
    expect(loads).toMatch(/(import|require) \.\/ora-[\w-]+\.c?js/); // the spinner's chunk, loaded for a terminal only
    expect(loads).not.toMatch(INK_OR_REACT);
  });

  it('NO_COLOR: the spinner draws without colour', async () => {
    const log = path.join(root, 'nocolor-loads.log');
    await viewer(['new-window', '-t', 'viewer', '-n', 'plain', '-e', 'NO_COLOR=1', '--', ...calInPane(log, ['continue', handle, 'Plain spin [[cal:shell=sleep 3; echo PLAIN-OUT]]'])]);
    const spinning = await waitForScreen('viewer:plain', (s) => /running · \d+s/.test(s), 'the spinner', 30_000, { escapes: true });
    const line = spinning.split('\n').find((l) => /running · \d+s/.test(l)) ?? '';
    expect(line).not.toMatch(/\u001B\[(3[0-7]|9[0-7]|38;)/);
    await waitForScreen('viewer:plain', (s) => s.includes(`handle: ${handle}`), 'the end of the turn', 60_000);
    expect(await fs.readFile(log, 'utf8')).not.toMatch(INK_OR_REACT);
  });
  it('continue --stream on a terminal: streamed tool lines and text stay readable next to the spinner', async () => {
    const log = path.join(root, 'stream-tty-loads.log');
    await viewer(['new-window', '-t', 'viewer', '-n', 'streamed', '--', ...calInPane(log, ['continue', handle, '--stream', 'Stream here [[cal:shell=sleep 3; echo TTY-OUT]]'])]);
    const during = await waitForScreen('viewer:streamed', (s) => /running · \d+s/.test(s) && s.includes('tool: shell sleep 3; echo TTY-OUT (running)'), 'the tool line above the spinner');
    expect(during.split('\n').filter((l) => l.includes('tool: shell sleep 3; echo TTY-OUT (running)'))).toHaveLength(1);
    const done = await waitForScreen('viewer:streamed', (s) => s.includes(`handle: ${handle}`), 'the end of the turn', 60_000, { history: true });
    const lines = done.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('Pane is dead'));
    expect(lines).toEqual([
      'tool: shell sleep 3; echo TTY-OUT (running)',
      expect.stringMatching(/^tool: shell sleep 3; echo TTY-OUT → completed: TTY-OUT/),
      'Tool finished: TTY-OUT',
      `handle: ${handle}`,
    ]);
    expect(await exitOf(log)).toBe('0');
    expect(await fs.readFile(log, 'utf8')).not.toMatch(INK_OR_REACT);
  });
});
