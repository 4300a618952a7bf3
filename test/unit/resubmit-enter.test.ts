import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { runProviderTurn } from '../../src/engine/decision.js';
import { fakeWorld, providerHandle, type FakePane } from '../support/fake-engine.js';

/**
 * The second Enter for a pasted message the CLI has not recorded after 3 s: not pressed on a box
 * that reads empty (it took the message), where a CLI can read it as a second submit: Cline CLI's
 * TUI, loaded and slow to record, answered one with "SessionRuntime state is running" and its turn
 * ended with nothing after the prompt. A box still holding text (a swallowed Enter) gets it.
 */
describe('Enter again for a pasted message the CLI has not recorded', () => {
  const enters = (pane: FakePane | undefined) => (pane?.keys ?? []).filter((k) => k.length === 1 && k[0] === 'Enter').length;

  async function livePane() {
    const w = fakeWorld();
    const first = await runProviderTurn(w.request(providerHandle(), 'Remember the codeword ONE.'));
    return { w, handle: first.handle, pane: w.tmux.panes.at(-1) };
  }

  it('a CLI that took the message and records it late gets no second Enter', async () => {
    const { w, handle, pane } = await livePane();
    w.cli.behaviour = (message, p) => {
      const session = w.cli.sessionOf(p);
      setTimeout(() => w.cli.write(session, [{ t: 'user', text: message, key: 'k2' }, { t: 'answer', text: 'late' }, { t: 'end' }]), 4500);
      return 'ignore';
    };
    const before = enters(pane);
    const { outcome } = await runProviderTurn(w.request(handle, 'What was it?'));
    expect(outcome).toMatchObject({ status: 'completed', answer: 'late' });
    expect(enters(pane) - before).toBe(0);
  }, 20_000);

  it('a CLI that swallowed the Enter (the message still in its box) gets Enter again, and the turn runs', async () => {
    const { w, handle, pane } = await livePane();
    w.tmux.swallowNextSubmit = true;
    const before = enters(pane);
    const { outcome } = await runProviderTurn(w.request(handle, 'What was it?'));
    expect(outcome).toMatchObject({ status: 'completed', answer: 'echo: What was it?' });
    expect(w.cli.received.at(-1)).toBe('What was it?');
    // The paste carried the first Enter (swallowed); the one key press is the second.
    expect(enters(pane) - before).toBe(1);
  }, 20_000);

  it('a box that draws a stand-in for the paste (not its words) still gets Enter again', async () => {
    // Cline CLI draws a long paste as `[<its start>... Pasted +63 lines]`; CI's CertPromptPaste
    // timed out while only the message's own words counted as "still in the box".
    const { w, handle, pane } = await livePane();
    w.tmux.drawBox = (box) => (box ? `[${box.slice(0, 5)}... Pasted +63 lines]` : '');
    w.tmux.swallowNextSubmit = true;
    const before = enters(pane);
    const { outcome } = await runProviderTurn(w.request(handle, 'What was it?'));
    expect(outcome).toMatchObject({ status: 'completed', answer: 'echo: What was it?' });
    expect(enters(pane) - before).toBe(1);
  }, 20_000);
});

/**
 * A TUI that drops an Enter arriving before it has taken the paste (`pasteSubmitDelayMs:
 * 'when-shown'`, Cline CLI): Enter once its box shows the message, and a second Enter only
 * while its processes sit idle. On CI, Cline's TUI showed the message in its box 7-9 s after
 * Enter while it worked; the second Enter then made two runs of one message.
 */
describe.runIf(process.platform === 'linux')("Enter for a TUI that drops an early one ('when-shown')", () => {
  const children: ChildProcess[] = [];
  afterEach(() => children.splice(0).forEach((c) => process.kill(-(c.pid as number), 'SIGKILL')));
  /**
   * The pane's "CLI": a real process leading a session of its own (as a pane's does), idle, and
   * when `busy` with two workers in its session (`yes`), so the session stays well over a quarter
   * of a core on a loaded machine. `settle()` stops the workers (the leader reaps them) and
   * leaves the leader running, idle.
   */
  const cliProcess = (busy: boolean) => {
    const child = spawn('sh', ['-c', busy ? 'yes > /dev/null & yes > /dev/null & wait; exec sleep 60' : 'exec sleep 60'], { detached: true, stdio: 'ignore' });
    children.push(child);
    const settle = () => spawnSync('pkill', ['-KILL', '-s', String(child.pid), '-x', 'yes']);
    return { pid: child.pid as number, settle };
  };
  const enterTimes = (w: ReturnType<typeof fakeWorld>) => {
    const times: number[] = [];
    const sendKeys = w.tmux.sendKeys.bind(w.tmux);
    w.tmux.sendKeys = async (paneId, keys) => {
      if (keys.includes('Enter')) times.push(Date.now());
      return sendKeys(paneId, keys);
    };
    return times;
  };

  it('presses Enter only once the box shows the paste', async () => {
    const w = fakeWorld({ pasteSubmitDelayMs: 'when-shown' });
    w.tmux.nextPaneProcess = cliProcess(false).pid;
    const first = await runProviderTurn(w.request(providerHandle(), 'Remember the codeword ONE.'));
    // The TUI draws the paste 1.5 s after it comes (its box reads empty until then).
    let drawnAt = Infinity;
    const paste = w.tmux.paste.bind(w.tmux);
    w.tmux.paste = async (paneId, text, submit) => {
      drawnAt = Date.now() + 1500;
      return paste(paneId, text, submit);
    };
    w.tmux.drawBox = (box) => (Date.now() < drawnAt ? '' : box);
    const times = enterTimes(w);
    const { outcome } = await runProviderTurn(w.request(first.handle, 'What was it?'));
    expect(outcome).toMatchObject({ status: 'completed', answer: 'echo: What was it?' });
    expect(times).toHaveLength(1);
    expect(times[0]).toBeGreaterThanOrEqual(drawnAt);
  }, 20_000);

  it('gives no second Enter while its processes work, and gives it once they sit idle (still running) with the message in the box', async () => {
    const w = fakeWorld({ pasteSubmitDelayMs: 'when-shown' });
    const busy = cliProcess(true);
    w.tmux.nextPaneProcess = busy.pid;
    const first = await runProviderTurn(w.request(providerHandle(), 'Remember the codeword ONE.'));
    w.tmux.swallowNextSubmit = true;
    const times = enterTimes(w);
    const turn = runProviderTurn(w.request(first.handle, 'What was it?', { timeoutMs: 20_000 }));
    await new Promise((r) => setTimeout(r, 7000));
    // Working all along: only the first Enter (swallowed), none again.
    expect(times).toHaveLength(1);
    const idleFrom = Date.now();
    // Its work done, the CLI waits at its prompt (its leader still runs, idle).
    busy.settle();
    const { outcome } = await turn;
    expect(outcome).toMatchObject({ status: 'completed', answer: 'echo: What was it?' });
    expect(times).toHaveLength(2);
    expect(times[1]).toBeGreaterThanOrEqual(idleFrom);
    expect(w.cli.received.filter((m) => m === 'What was it?')).toHaveLength(1);
  }, 30_000);
});
