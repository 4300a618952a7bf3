import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { AgentSessions } from '../../src/sessions/agent-sessions.js';
import { baseEnv, handleFromStderr, killStateTmux, runCal, scratchDir, type CalRun } from '../support/cal.js';
import { cliBin } from '../support/clis.js';
import { recordFault } from '../support/fault-matrix.js';
import { makeWorkDir, removeScratch } from '../support/scratch.js';

/**
 * Issue 13, items 1, 2 and 7, with the real Pi and Claude Code in tmux: what the CLI passes over
 * before it decides (leading blanks for Pi; blanks, escape sequences and invisible characters
 * for Claude) never turns a message into a command, and a message with characters the CLI
 * drops when it stores the prompt still finds its own record. Each class is tried with several
 * characters, not one.
 */
const PI_BLANKS: Array<[string, string]> = [
  ['space', ' '],
  ['tab', '\t'],
  ['LF', '\n'],
  ['CR', '\r'],
  ['U+00A0', '\u00a0'],
  ['U+3000', '\u3000'],
  ['U+FEFF', '\ufeff'],
  ['ESC[0m then a space', '\u001b[0m '],
];

const CLAUDE_SLASH_PREFIXES: Array<[string, string]> = [
  ['ESC[0m', '\u001b[0m'],
  ['8-bit CSI', '\u009b0m'],
  ['OSC title', '\u001b]0;t\u0007'],
  ['ESC 7', '\u001b7'],
  ['soft hyphen', '\u00ad'],
  ['U+034F', '\u034f'],
  ['U+180E', '\u180e'],
  ['space and U+2060', ' \u2060'],
];

describe('leading and invisible characters reach the real CLIs as text, or are refused', () => {
  let server: ModelServer;
  let root: string;
  let state: string;
  const envs = new Map<string, Record<string, string>>();
  const cal = (provider: string, args: string[]): Promise<CalRun> => runCal(['--state-dir', state, ...args], { env: envs.get(provider) as Record<string, string> });

  async function start(provider: 'pi' | 'claude-code', bin: 'pi' | 'claude', codeword: string): Promise<{ handle: string; work: string }> {
    const work = await makeWorkDir(root, `work-${provider}`);
    const run = await cal(provider, ['start', '--provider', provider, '--cwd', work, '--cli-path', cliBin(bin), '--timeout', '90', `Remember the codeword ${codeword}.`]);
    expect(run.code, run.stderr).toBe(0);
    return { handle: handleFromStderr(run.stderr) as string, work };
  }

  beforeAll(async () => {
    server = await startModelServer({});
    root = await scratchDir('leading-chars');
    state = path.join(root, 'state');
    for (const p of ['pi', 'claude-code'] as const) envs.set(p, await AgentSessions.scriptedModelEnv(p, path.join(root, p), server.url, baseEnv({})));
  });

  afterAll(async () => {
    await killStateTmux(state);
    await server.close();
    await removeScratch(root);
  });

  it('Pi: a "!" or "/" after any leading blank stays text (no shell command, no /quit)', async () => {
    const { handle, work } = await start('pi', 'pi', 'KIWI');
    for (const [name, blank] of PI_BLANKS) {
      const marker = path.join(work, `pwned-${name.replace(/\W+/g, '_')}`);
      const run = await cal('pi', ['continue', handle, '--timeout', '60', '--json', `${blank}!touch ${marker}`]);
      expect(run.code, `${name}: ${run.stdout}${run.stderr}`).toBe(0);
      expect(existsSync(marker), `${name}: the shell command ran`).toBe(false);
    }
    const quit = await cal('pi', ['continue', handle, '--timeout', '60', '--json', ' /quit']);
    expect(quit.code, quit.stdout).toBe(0);
    const after = await cal('pi', ['continue', handle, '--timeout', '60', 'What was the codeword?']);
    expect(after.stdout.trim()).toBe('The codeword was KIWI.');
    // The pane the session started in is still the current one: nothing ended it.
    const view = (await cal('pi', ['inspect', handle, '--json'])).json;
    expect(view.currentPaneAlive).toBe(true);
    expect(view.panes).toHaveLength(1);
    recordFault({
      id: 'input.pi-leading-blank-command',
      area: 'input',
      fault: 'a `!cmd` or `/quit` behind a leading blank (space, tab, LF, CR, U+00A0, U+3000, U+FEFF, an escape then a space) into Pi',
      how: '`cal continue <pi handle> " !touch X"` (and each other blank) into the live pane (real Pi 0.73.1)',
      outcome: 'exit 0 each; the text reached the model; no file created; /quit did not end the session; the codeword is recalled after',
      state: 'same pane; handle valid',
      test: 'test/security/leading-characters.test.ts',
    });
  });

  it('Claude Code: a "/" behind what Claude strips first is refused with usage (2) before any turn, and the session lives on', async () => {
    const { handle } = await start('claude-code', 'claude', 'TANGO');
    const turnsBefore = (await cal('claude-code', ['inspect', handle, '--json'])).json.turns.length;
    for (const [name, prefix] of CLAUDE_SLASH_PREFIXES) {
      const run = await cal('claude-code', ['continue', handle, '--json', `${prefix}/exit`]);
      expect(run.code, `${name}: ${run.stdout}`).toBe(2);
      expect(run.json.error.kind).toBe('usage');
    }
    const first = await cal('claude-code', ['start', '--provider', 'claude-code', '--cwd', root, '--json', '\u00ad/exit']);
    expect(first.code).toBe(2);
    const view = (await cal('claude-code', ['inspect', handle, '--json'])).json;
    expect(view.turns.length).toBe(turnsBefore);
    const after = await cal('claude-code', ['continue', handle, 'What was the codeword?']);
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout.trim()).toBe('The codeword was TANGO.');
    recordFault({
      id: 'input.claude-slash-behind-stripped',
      area: 'input',
      fault: 'a `/exit` behind what Claude Code strips first (ESC[0m, 8-bit CSI, OSC, ESC 7, U+00AD, U+034F, U+180E, U+2060)',
      how: '`cal continue <h>` and `cal start` with each prefix (real Claude Code 2.1.328)',
      outcome: 'exit 2 (usage) before any turn is recorded; the session is not ended and recalls after',
      state: 'same pane; no turn record added',
      test: 'test/security/leading-characters.test.ts',
    });
  });

  it('Claude Code: a message with the invisible characters Claude drops when it stores a prompt still ends its own turn', async () => {
    const handle = (await cal('claude-code', ['inspect', '--json'])).json.handles.find((h: { provider: { provider: string } }) => h.provider.provider === 'claude-code').id as string;
    for (const message of ['a\u200bb\u2060c\ufeffd\u202ee\u00adf [[cal:reply=ok1]]', 'line\u2028break [[cal:reply=ok2]]', '[Request interrupted by user] not really [[cal:reply=ok3]]']) {
      const run = await cal('claude-code', ['continue', handle, '--timeout', '60', '--json', message]);
      expect(run.code, `${JSON.stringify(message)}: ${run.stdout}`).toBe(0);
      expect(run.json.turn.answer).toMatch(/^ok\d$/);
    }
  });
});
