import { cleanup, render } from 'ink-testing-library';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { App } from '../../src/tui/App.js';
import { FakeSource, NOW, certified, currentPane, summary, tick, turn, view, waitForFrame } from './fixtures.js';

afterEach(() => cleanup());

const ARROW_DOWN = '\u001B[B';
const ARROW_UP = '\u001B[A';
const ENTER = '\r';
const ESC = '\u001B';

function source(): FakeSource {
  const s = new FakeSource();
  s.summaries = [summary('aaaaaa1111', { name: 'one' }), summary('abc123def0', { name: 'refactor' })];
  s.views.set('abc123def0', view());
  s.screens.set('abc123def0', 'first screen line\n> typing');
  return s;
}

describe('inspect App', () => {
  it('lists the handles, moves with the arrows, and Enter opens the selected one', async () => {
    const src = source();
    const { lastFrame, stdin } = render(<App source={src} initial={{ mode: 'list', ref: null, selected: 0 }} clock={() => NOW} pollMs={50} />);
    await waitForFrame(lastFrame, (f) => f.includes('› aaaaaa1111'));
    await tick(); // input is read once the first effects ran
    expect(lastFrame()).toContain('↑/↓ move · enter open · r refresh · q quit');
    stdin.write(ARROW_DOWN);
    await waitForFrame(lastFrame, (f) => f.includes('› abc123def0'));
    stdin.write(ARROW_DOWN); // stays on the last row
    await tick();
    stdin.write(ARROW_UP);
    await waitForFrame(lastFrame, (f) => f.includes('› aaaaaa1111'));
    stdin.write(ARROW_DOWN);
    await waitForFrame(lastFrame, (f) => f.includes('› abc123def0'));
    await tick();
    stdin.write(ENTER);
    const detail = await waitForFrame(lastFrame, (f) => f.includes('handle abc123def0 (refactor)'));
    expect(detail).toContain('first screen line');
    expect(detail).toContain('a attach (detach with C-b d) · esc list · r refresh · q quit');
    stdin.write(ESC);
    await waitForFrame(lastFrame, (f) => f.includes('cal inspect · 2 handles'));
  });

  it('refreshes the open handle as things change (new turn, pane gone, screen)', async () => {
    const src = source();
    const { lastFrame } = render(<App source={src} initial={{ mode: 'detail', ref: 'abc123def0', selected: 0 }} clock={() => NOW} pollMs={40} />);
    await waitForFrame(lastFrame, (f) => f.includes('first screen line') && f.includes('● alive'));
    src.screens.set('abc123def0', 'the CLI is thinking now');
    await waitForFrame(lastFrame, (f) => f.includes('the CLI is thinking now'));
    const before = view();
    src.views.set('abc123def0', {
      ...before,
      panes: [{ ...currentPane, alive: false }, ...before.panes.slice(1)],
      currentPaneAlive: false,
      turns: [...before.turns, turn(4, { status: 'running', answer: null, message: 'a fourth message' })],
    });
    const after = await waitForFrame(lastFrame, (f) => f.includes('○ gone') && f.includes('t0004-abcdef running'));
    expect(after).toContain('turns (4)');
    expect(after).not.toContain('the CLI is thinking now');
  });

  it('q quits', async () => {
    const src = source();
    const { lastFrame, stdin, frames } = render(<App source={src} initial={{ mode: 'list', ref: null, selected: 0 }} clock={() => NOW} pollMs={30} />);
    await waitForFrame(lastFrame, (f) => f.includes('aaaaaa1111'));
    await tick();
    stdin.write('q');
    await tick(100);
    const calls = src.calls.length;
    const count = frames.length;
    await tick(200);
    // Unmounted: no more polling, no more frames.
    expect(src.calls.length).toBe(calls);
    expect(frames.length).toBe(count);
  });

  it('a asks for the attach argv of the live pane, hands it over and exits', async () => {
    const src = source();
    const onAttach = vi.fn();
    const { lastFrame, stdin } = render(
      <App source={src} initial={{ mode: 'list', ref: null, selected: 1 }} clock={() => NOW} pollMs={30} onAttach={onAttach} />,
    );
    await waitForFrame(lastFrame, (f) => f.includes('› abc123def0'));
    await tick();
    stdin.write(ENTER);
    await waitForFrame(lastFrame, (f) => f.includes('● alive'));
    stdin.write('a');
    await vi.waitFor(() => expect(onAttach).toHaveBeenCalledTimes(1));
    expect(onAttach).toHaveBeenCalledWith(src.attach, { mode: 'detail', ref: 'abc123def0', selected: 1 });
    const calls = src.calls.length;
    await tick(150);
    expect(src.calls.length).toBe(calls);
  });

  it('a without a live pane says so and stays', async () => {
    const src = source();
    src.views.set('abc123def0', view({ panes: [{ ...currentPane, alive: false }], currentPaneAlive: false }));
    const onAttach = vi.fn();
    const { lastFrame, stdin } = render(
      <App source={src} initial={{ mode: 'detail', ref: 'abc123def0', selected: 0 }} clock={() => NOW} pollMs={30} onAttach={onAttach} />,
    );
    await waitForFrame(lastFrame, (f) => f.includes('○ gone'));
    await tick();
    stdin.write('a');
    await waitForFrame(lastFrame, (f) => f.includes('no live pane to attach to'));
    expect(onAttach).not.toHaveBeenCalled();
  });

  it('shows a notice handed over from the last attach, and a read error as one line', async () => {
    const src = source();
    const { lastFrame } = render(
      <App source={src} initial={{ mode: 'detail', ref: 'zzzzzz9999', selected: 0 }} clock={() => NOW} pollMs={30} initialNotice="tmux attach ended with status 1" />,
    );
    const frame = await waitForFrame(lastFrame, (f) => f.includes('cal: not_found: no handle zzzzzz9999'));
    expect(frame).toContain('tmux attach ended with status 1');
  });
  it('reads the certification of the pinned CLI version from the source', async () => {
    const src = source();
    src.certifications.set('claude-code@2.1.328', [certified()]);
    const { lastFrame } = render(<App source={src} initial={{ mode: 'detail', ref: 'abc123def0', selected: 0 }} clock={() => NOW} pollMs={30} />);
    await waitForFrame(lastFrame, (f) => f.includes('certified  scripted: yes (14 pass, 2 skipped, 3h ago)'));
  });
});
