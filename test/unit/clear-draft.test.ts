import { describe, expect, it } from 'vitest';
import { loadRegisteredAdapters } from '../../src/adapters/registry.js';
import { runProviderTurn } from '../../src/engine/decision.js';
import { removedRows } from '../../src/engine/draft.js';
import { CalError } from '../../src/errors.js';
import { fakeDraft, fakeWorld, providerHandle } from '../support/fake-engine.js';

/**
 * Issue 41: a draft a person left in a live pane's input box never goes out with cal's message.
 * cal reads the box off the screen; an empty one gets no keys at all (the paste goes as before);
 * a draft is cleared with the adapter's keys, each round waited on until the TUI drew it, and
 * the message is pasted only onto the emptied box and submitted once it shows there alone.
 */
describe('a draft in a live pane', () => {
  it('an empty box gets no clearing keys: the paste and its Enter go as before', async () => {
    const w = fakeWorld();
    const first = await runProviderTurn(w.request(providerHandle(), 'one'));
    const second = await runProviderTurn(w.request(first.handle, 'two'));
    expect(second.outcome).toMatchObject({ status: 'completed', answer: 'echo: two' });
    expect(w.tmux.panes[0]?.keys).toEqual([]);
    expect(w.cli.received).toEqual(['one', 'two']);
  });

  it('a draft is cleared before the paste, and only cal’s message reaches the CLI', async () => {
    const w = fakeWorld();
    const first = await runProviderTurn(w.request(providerHandle(), 'one'));
    w.tmux.panes[0]!.box = 'my half typed draft';
    const second = await runProviderTurn(w.request(first.handle, 'What was the codeword?'));
    expect(second.outcome).toMatchObject({ status: 'completed', answer: 'echo: What was the codeword?' });
    expect(w.cli.received).toEqual(['one', 'What was the codeword?']);
    // The keys went in before the paste; Enter only after the paste showed in the emptied box.
    expect(w.tmux.panes[0]?.keys).toEqual([['End', 'C-u'], ['Enter']]);
    // The draft is not thrown away in silence: its text goes in a draft_cleared event, before sending.
    const at = w.hooks.events.indexOf('draft_cleared');
    expect(at).toBeGreaterThanOrEqual(0);
    expect(w.hooks.details[at]).toEqual({ text: 'my half typed draft', rows: ['> my half typed draft'] });
  });

  it('an empty box records no draft_cleared event', async () => {
    const w = fakeWorld();
    const first = await runProviderTurn(w.request(providerHandle(), 'one'));
    await runProviderTurn(w.request(first.handle, 'two'));
    expect(w.hooks.events).not.toContain('draft_cleared');
  });

  it('the rows a clearing removed hold a draft that wrapped onto several rows', () => {
    const before = { lines: ['history', '> first row of the draft', '  second row', '  third row', 'footer'], cursor: { x: 0, y: 0, visible: true } };
    const after = { lines: ['history', '> ', 'footer'], cursor: { x: 0, y: 0, visible: true } };
    expect(removedRows(before, after)).toEqual(['> first row of the draft', '  second row', '  third row']);
  });

  it('a CLI whose Ctrl-U takes one wrapped row gets one round a row, each waited on', async () => {
    const w = fakeWorld();
    const first = await runProviderTurn(w.request(providerHandle(), 'one'));
    w.tmux.ctrlUDeletes = 80;
    w.tmux.panes[0]!.box = 'x'.repeat(200);
    const second = await runProviderTurn(w.request(first.handle, 'two'));
    expect(second.outcome.status).toBe('completed');
    expect(w.cli.received).toEqual(['one', 'two']);
    expect(w.tmux.panes[0]?.keys).toEqual([['End', 'C-u'], ['End', 'C-u'], ['End', 'C-u'], ['Enter']]);
  });

  it('a draft the keys do not clear is refused with a typed error, before the turn is sending and with nothing pasted', async () => {
    const w = fakeWorld({ draft: { ...fakeDraft, keys: ['End'] } });
    const first = await runProviderTurn(w.request(providerHandle(), 'one'));
    w.tmux.panes[0]!.box = 'stuck';
    const statuses = w.hooks.statuses.length;
    const err = await runProviderTurn(w.request(first.handle, 'two')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CalError);
    expect((err as CalError).kind).toBe('non_continuable');
    expect((err as CalError).message).toMatch(/could not clear the draft .*nothing was sent/);
    expect(w.tmux.panes[0]?.pasted).toEqual([]);
    expect(w.hooks.statuses.slice(statuses)).not.toContain('sending');
    expect(w.cli.received).toEqual(['one']);
  }, 60_000);

  it('every CLI that takes pastes reads its box and declares keys that clear it; none submits, interrupts or quits', async () => {
    const pasting = (await loadRegisteredAdapters()).filter((a) => a.capabilities.tmuxContinuation);
    expect(pasting.map((a) => a.name).sort()).toEqual(['claude-code', 'codex', 'copilot', 'gemini', 'pi', 'qwen', 'opencode', 'cline', 'kilo'].sort());
    for (const adapter of pasting) {
      expect(adapter.draft?.keys, adapter.name).toContain('C-u');
      for (const key of adapter.draft?.keys ?? []) expect(['Enter', 'C-m', 'C-j', 'Escape', 'C-c', 'C-d'], adapter.name).not.toContain(key);
    }
  });

  it('a CLI whose input cannot be cleared is refused with a typed error while its pane lives, before anything is sent', async () => {
    const w = fakeWorld({ draft: null });
    const first = await runProviderTurn(w.request(providerHandle(), 'one'));
    const err = await runProviderTurn(w.request(first.handle, 'two')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CalError);
    expect((err as CalError).kind).toBe('non_continuable');
    expect((err as CalError).message).toMatch(/cannot be cleared of a draft/);
    expect(w.tmux.panes[0]?.pasted).toEqual([]);
    expect(w.tmux.panes[0]?.keys).toEqual([]);
    expect(w.cli.received).toEqual(['one']);
    // Its pane gone, the session is resumed in a new pane as ever (nothing there to clear).
    await w.tmux.killSession(first.handle.tmux?.session as string);
    const resumed = await runProviderTurn(w.request(first.handle, 'two', { paneName: 'cal-h-2' }));
    expect(resumed.outcome.status).toBe('completed');
    expect(w.cli.received).toEqual(['one', 'two']);
  });
});
