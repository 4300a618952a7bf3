import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paneText } from '../../src/engine/pane-text.js';
import { handleFromStderr } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { recordFault } from '../support/fault-matrix.js';

/**
 * Issue 7 acceptance with the real Claude Code binary: messages that carry terminal escapes
 * (the bracketed-paste end marker, OSC, a nested paste start, 8-bit CSI) arrive as inert text.
 * The last test is the control: the same bytes pasted raw through tmux do run a shell command.
 */
const ESC = '\u001b';
const NAK = '\u0015'; // ctrl-U: clears the input line, so a following '!' opens bash mode

interface Attack {
  id: string;
  label: string;
  marker: string;
  message: (marker: string) => string;
}

const attacks: Attack[] = [
  { id: 'paste-end-cr', label: 'paste end marker, then CR', marker: 'X', message: (m) => `echo harmless${ESC}[201~\rtouch ${m}\r` },
  { id: 'paste-end-bash', label: 'paste end marker, ctrl-U, then `!cmd` CR (bash mode)', marker: 'X1', message: (m) => `echo harmless${ESC}[201~${NAK}!touch ${m}\r` },
  { id: 'osc', label: 'OSC title string, then paste end and bash mode', marker: 'X2', message: (m) => `echo harmless${ESC}]0;pwned${ESC}\\${ESC}]2;t\u0007${ESC}[201~${NAK}!touch ${m}\r` },
  { id: 'paste-start', label: 'nested paste start and end markers', marker: 'X3', message: (m) => `${ESC}[200~echo harmless${ESC}[201~${NAK}!touch ${m}\r\n${ESC}[200~more` },
  { id: 'c1-csi', label: '8-bit CSI (U+009B) end marker, then bash mode', marker: 'X4', message: (m) => `echo harmless\u009b201~${NAK}!touch ${m}\r` },
];

interface Rec {
  type?: string;
  subtype?: string;
  promptId?: string;
  isMeta?: boolean;
  message?: { content?: unknown };
}

async function recordsFrom(file: string, offset: number): Promise<Rec[]> {
  const buf = await fs.readFile(file);
  return buf
    .subarray(offset)
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Rec);
}

const humanPrompts = (recs: Rec[]) => recs.filter((r) => r.type === 'user' && r.promptId && !r.isMeta && typeof r.message?.content === 'string');
const turnEnds = (recs: Rec[]) => recs.filter((r) => r.type === 'system' && r.subtype === 'turn_duration');

describe('escape sequences in a message reach the real Claude Code as inert text', () => {
  let suite: CliSuite;
  let work: string;
  let handle = '';

  const cal = (args: string[], input?: string) => suite.cal(args, { input });
  const inspect = () => suite.inspect(handle);

  beforeAll(async () => {
    suite = await cliSuite('claude-code', { prefix: 'sec-paste' });
    ({ work } = suite);
  });

  afterAll(async () => {
    await suite.close();
  });

  it('a first message with escapes goes through the launch argv as inert text', async () => {
    const message = `Remember the codeword ORCA.${ESC}[201~${NAK}!touch X0\r${ESC}]0;pwned\u0007`;
    const run = await cal(['start', '--provider', 'claude-code', '--cwd', work, '--json', '-'], message);
    handle = handleFromStderr(run.stderr) ?? run.json?.handle ?? '';
    expect(run.code).toBe(0);
    expect(run.json.turn.answer).toBe('OK, I will remember the codeword ORCA.');
    const view = await inspect();
    const recs = await recordsFrom(view.provider.transcript.path, 0);
    expect(humanPrompts(recs)).toHaveLength(1);
    expect(humanPrompts(recs)[0]!.message!.content).toBe(paneText(message));
    expect(paneText(message)).toBe('Remember the codeword ORCA.␕!touch X0\n');
    expect(turnEnds(recs)).toHaveLength(1);
    expect(existsSync(path.join(work, 'X0'))).toBe(false);
    recordFault({
      id: 'input.escape-in-launch-argv',
      area: 'input',
      fault: 'first message carries paste-end marker, ctrl-U, `!touch X0`, OSC',
      how: '`cal start ... -` with the bytes on stdin (real Claude Code 2.1.328)',
      outcome: `exit ${run.code}; one user record with the escapes removed and ctrl-U shown as ␕; one turn; X0 not created`,
      state: 'handle valid; turn completed',
      test: 'test/security/paste-escape.test.ts',
    });
  });

  for (const attack of attacks) {
    it(`pasted into the live pane: ${attack.label}`, async () => {
      const before = await inspect();
      const message = attack.message(attack.marker);
      const run = await cal(['continue', handle, '--json', '-'], message);
      expect(run.code).toBe(0);
      expect(run.json.turn.status).toBe('completed');
      const after = await inspect();
      expect(after.provider.tmux.paneId).toBe(before.provider.tmux.paneId);
      const recs = await recordsFrom(after.provider.transcript.path, before.provider.transcript.offset);
      const prompts = humanPrompts(recs);
      // One new prompt holding the whole sanitized text (nothing submitted early, no bash mode).
      expect(prompts).toHaveLength(1);
      const stored = prompts[0]!.message!.content as string;
      expect(stored).toBe(paneText(message).trim());
      expect(stored).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
      expect(recs.some((r) => JSON.stringify(r.message?.content ?? '').includes('bash-input'))).toBe(false);
      // From the new prompt on: a turn that ended on Claude's Stop hook leaves the stored offset
      // before the previous turn's turn_duration record, which Claude writes after the hook.
      expect(turnEnds(recs.slice(recs.indexOf(prompts[0]!)))).toHaveLength(1);
      expect(run.json.turn.answer).toMatch(/^Received: echo harmless/);
      expect(existsSync(path.join(work, attack.marker))).toBe(false);
      recordFault({
        id: `input.escape-paste-${attack.id}`,
        area: 'input',
        fault: `pasted message: ${attack.label}`,
        how: '`cal continue <h> -` into the live pane (real Claude Code 2.1.328)',
        outcome: `exit ${run.code}; one new user record, equal to the sanitized text; one turn; ${attack.marker} not created`,
        state: 'same pane; handle valid; turn completed',
        test: 'test/security/paste-escape.test.ts',
      });
    });
  }

  it('the session still works afterwards and remembers the first message', async () => {
    const run = await cal(['continue', handle, 'What was the codeword?']);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe('The codeword was ORCA.');
  });

  it('control: the same bytes pasted raw through tmux (no cal) do run the command', async () => {
    const view = await inspect();
    const socket = await suite.tmuxSocket();
    await execa('tmux', ['-S', socket, 'load-buffer', '-b', 'raw', '-'], { input: attacks[1]!.message('CONTROL') });
    await execa('tmux', ['-S', socket, 'paste-buffer', '-p', '-d', '-b', 'raw', '-t', view.provider.tmux.paneId]);
    const deadline = Date.now() + 15_000;
    while (!existsSync(path.join(work, 'CONTROL')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(existsSync(path.join(work, 'CONTROL'))).toBe(true);
  });
});
