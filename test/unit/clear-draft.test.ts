import { describe, expect, it } from 'vitest';
import { loadRegisteredAdapters } from '../../src/adapters/registry.js';
import { runProviderTurn } from '../../src/engine/decision.js';
import { CalError } from '../../src/errors.js';
import { fakeWorld, providerHandle } from '../support/fake-engine.js';

/**
 * Issue 41: a draft a person left in a live pane's input box never goes out with cal's message.
 * The adapter's keys clear it before every paste into a live pane; an adapter that declares no
 * such keys is refused before anything is sent.
 */
describe('a draft in a live pane', () => {
  it('the adapter’s clear keys go into the live pane before the paste', async () => {
    const w = fakeWorld({ clearDraftKeys: ['End', 'C-u'] });
    const first = await runProviderTurn(w.request(providerHandle(), 'one'));
    const order: string[] = [];
    const { sendKeys, pasteIfOwn } = w.tmux;
    w.tmux.sendKeys = async (paneId, keys) => (order.push(`keys ${keys.join(' ')}`), sendKeys.call(w.tmux, paneId, keys));
    w.tmux.pasteIfOwn = async (own, text, submit) => (order.push(`paste ${text}`), pasteIfOwn.call(w.tmux, own, text, submit));
    const second = await runProviderTurn(w.request(first.handle, 'two'));
    expect(second.outcome).toMatchObject({ status: 'completed', answer: 'echo: two' });
    expect(order).toEqual(['keys End C-u', 'paste two']);
    // A freshly launched pane holds no draft: nothing is pressed there.
    expect(w.tmux.panes[0]?.keys).toEqual([['End', 'C-u']]);
  });

  it('every CLI that takes pastes declares keys that clear a draft, and none of them submits, interrupts or quits', async () => {
    const pasting = (await loadRegisteredAdapters()).filter((a) => a.capabilities.tmuxContinuation);
    expect(pasting.map((a) => a.name).sort()).toEqual(['claude-code', 'codex', 'gemini', 'pi'].sort());
    for (const adapter of pasting) {
      expect(adapter.clearDraftKeys, adapter.name).toContain('C-u');
      for (const key of adapter.clearDraftKeys ?? []) expect(['Enter', 'C-m', 'C-j', 'Escape', 'C-c', 'C-d'], adapter.name).not.toContain(key);
    }
  });

  it('a CLI whose input cannot be cleared is refused with a typed error while its pane lives, before anything is sent', async () => {
    const w = fakeWorld({ clearDraftKeys: null });
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
