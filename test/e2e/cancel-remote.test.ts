import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleFromStderr } from '../support/cal.js';
import { cliSuite, type CliSuite, type SuiteProvider } from '../support/cli-suite.js';

/**
 * `cal cancel` from a second process (issue 41), with the real pinned CLIs in real tmux against
 * the scripted model: a turn the model holds for 30 s ends within 3 s, the owning cal exits 11,
 * the handle is free and the session recalls; a busy refusal meanwhile is no turn and reaches no
 * model; on an idle handle cancel is a no-op. CAL_CANCEL_PROVIDERS picks the CLIs (default: all
 * four pane CLIs; Pi only where cal runs on Node >= 22.19, docs/node.md).
 */
// Pi 1.x runs only on Node >= 22.19 (the node cal runs on is first on the CLIs' PATH): CI's.
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
const nodeRunsPi = major > 22 || (major === 22 && minor >= 19);
const providers = (process.env.CAL_CANCEL_PROVIDERS ?? (nodeRunsPi ? 'claude-code,codex,pi,gemini' : 'claude-code,codex,gemini')).split(',').filter(Boolean) as SuiteProvider[];
const HELD = 'Hold on [[cal:delay=30000]][[cal:reply=too late]]';
const RECALL = 'What was the codeword?';

async function until(what: () => Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await what())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 100));
  }
}

function cancelScenarios(provider: SuiteProvider, transport: 'tmux' | 'structured'): void {
  describe(`cal cancel on ${provider} (${transport})`, () => {
    let s: CliSuite;
    let handle: string;

    beforeAll(async () => {
      s = await cliSuite(provider, { prefix: `cancel-${provider}` });
      const run = await s.cal(['start', '--provider', provider, '--transport', transport, '--cwd', s.work, '--timeout', '120', 'Remember the codeword LOTUS.']);
      expect(run.code, run.stderr).toBe(0);
      handle = handleFromStderr(run.stderr) as string;
    }, 180_000);
    afterAll(async () => s?.close());

    it('on an idle handle: a no-op that says so, exit 0', async () => {
      const run = await s.cal(['cancel', handle]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain('nothing to cancel');
      const json = await s.cal(['cancel', handle, '--json']);
      expect(json.json).toMatchObject({ handle, action: 'idle', turn: null });
    });

    it('a held turn ends within 3 s of cal cancel from another process: its cal exits 11; a busy refusal meanwhile is no turn and reaches no model', async () => {
      const owner = s.spawnCal(['continue', handle, '--json', '--timeout', '120', HELD]);
      await until(async () => (await s.inspect(handle)).turns.at(-1)?.status === 'running', 60_000);
      const turnsBefore = (await s.inspect(handle)).turns;
      const requestsBefore = s.server.turnRequests().length;

      // A second caller while the turn runs: busy at once, no turn record, nothing sent.
      const busy = await s.cal(['continue', handle, 'Not now please']);
      expect(busy.code, busy.stderr).toBe(5);
      expect((await s.inspect(handle)).turns).toEqual(turnsBefore);

      const t0 = Date.now();
      const cancel = await s.cal(['cancel', handle, '--json']);
      expect(cancel.code, cancel.stderr).toBe(0);
      expect(cancel.json).toMatchObject({ handle, action: 'cancelled', turn: { status: 'interrupted' } });
      const ended = await owner.done;
      const took = Date.now() - t0;
      expect(ended.code, ended.stderr).toBe(11);
      expect(took).toBeLessThan(3000);
      expect((await s.inspect(handle)).turns.at(-1)).toMatchObject({ status: 'interrupted', message: HELD });
      expect(s.server.turnRequests().slice(requestsBefore).some((r) => r.lastUserMessage?.includes('Not now please'))).toBe(false);
    }, 240_000);

    // Claude Code puts a prompt cancelled before any answer back into its input box: cal clears
    // that draft before the next paste (docs/drafts.md), so nothing of it leaks.
    it('after the cancel, the next continue reaches the model exactly as sent and recalls', async () => {
      const next = await s.cal(['continue', handle, '--timeout', '120', RECALL]);
      expect(next.code, next.stderr).toBe(0);
      expect(next.stdout.trim()).toBe('The codeword was LOTUS.');
      expect(s.server.turnRequests().at(-1)!.lastUserMessage).toBe(RECALL);
      expect(s.server.turnRequests().some((r) => r.userMessages.some((m) => m.includes('Not now please')))).toBe(false);
    }, 240_000);

    if (transport === 'tmux') {
      it('attach on a non-TTY: a usage error that prints the tmux command', async () => {
        const run = await s.cal(['attach', handle]);
        expect(run.code).toBe(2);
        expect(run.stderr).toMatch(/^cal: usage: cal attach needs a terminal .*run: tmux -S \S+ attach-session -t /m);
      });

      it('attach when the pane is gone: says so and suggests cal continue', async () => {
        expect((await s.cal(['kill-tmux', handle])).code).toBe(0);
        const run = await s.cal(['attach', handle]);
        expect(run.code, run.stderr).toBe(3);
        expect(run.stderr).toMatch(/^cal: not_found: handle \S+ has no live pane \(it ended\); cal continue \S+ "<message>" resumes the session in a new one$/m);
      });
    } else {
      it('attach on a structured session: non_applicable', async () => {
        const run = await s.cal(['attach', handle]);
        expect(run.code, run.stderr).toBe(8);
      });
    }
  });
}

for (const provider of providers) cancelScenarios(provider, 'tmux');
if (providers.includes('claude-code')) cancelScenarios('claude-code', 'structured');
