import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentSessions } from '../../src/sessions/agent-sessions.js';
import type { StateStore } from '../../src/state/store.js';
import { kindOf } from '../support/errors.js';
import { type FakeCli, type FakeTmux, fakeSessions } from '../support/fake-engine.js';
import { removeScratch } from '../support/scratch.js';

/**
 * Issue 20, item 4: a handle can be removed (its panes ended, its records deleted) and a name
 * reused on purpose (`start --replace`), never while a turn is in flight unless forced.
 */
describe('removing a handle and replacing a name (fake CLI, fake tmux)', () => {
  let root: string;
  let store: StateStore;
  let cli: FakeCli;
  let tmux: FakeTmux;
  let sessions: AgentSessions;
  const env = { PATH: process.env.PATH ?? '' };

  beforeEach(async () => {
    ({ root, store, cli, tmux, sessions } = await fakeSessions('remove-fake'));
  });
  afterEach(async () => removeScratch(root));

  const start = (message: string, extra: Partial<Parameters<AgentSessions['start']>[0]> = {}) =>
    sessions.start({ provider: 'claude-code', message, cwd: root, env, timeoutSeconds: 5, ...extra });

  /** The CLI records the message and keeps working on it (no end of turn). */
  const slowCli = () => {
    cli.behaviour = (m) => [{ t: 'user', text: m, key: `k-${m}` }];
  };

  it('remove ends the live pane and deletes the handle, its events and turns; the name is free again', async () => {
    const { handle } = await start('one', { name: 'nightly' });
    const pane = tmux.panes[0]!;
    expect(pane.dead).toBe(false);
    const removed = await sessions.remove('nightly');
    expect(removed).toMatchObject({ handle: { id: handle.id, name: 'nightly' }, panesEnded: 1 });
    expect(pane.dead).toBe(true);
    for (const file of [store.handleFile(handle.id), store.eventsFile(handle.id), store.turnsDir(handle.id)]) expect(existsSync(file)).toBe(false);
    expect(await kindOf(sessions.remove('nightly'))).toBe('not_found');
    expect(await kindOf(sessions.continue({ ref: handle.id, message: 'two', env }))).toBe('not_found');
    const again = await start('one again', { name: 'nightly' });
    expect(again.handle.name).toBe('nightly');
    expect(again.handle.id).not.toBe(handle.id);
  });

  it('a turn still in flight refuses remove with busy (naming the turn); --force removes it and ends the pane', async () => {
    const { handle } = await start('one', { name: 'q' });
    slowCli();
    expect(await kindOf(sessions.continue({ ref: 'q', message: 'slow', env, timeoutSeconds: 0.3 }))).toBe('timeout');
    const refused = await sessions.remove('q').catch((e) => e);
    expect(refused).toMatchObject({ kind: 'busy', exitCode: 5 });
    expect(refused.message).toMatch(/never settled .*running.*--force/);
    expect(existsSync(store.handleFile(handle.id))).toBe(true);
    expect(tmux.panes.some((p) => !p.dead)).toBe(true);
    const forced = await sessions.remove('q', true);
    expect(forced.panesEnded).toBe(1);
    expect(tmux.panes.filter((p) => !p.dead)).toEqual([]);
    expect(existsSync(store.handleFile(handle.id))).toBe(false);
  });

  it('a cal holding the handle refuses remove with busy; --force does not wait for it', async () => {
    const { handle } = await start('one', { name: 'held' });
    const held = await store.locks.acquire(`handle-${handle.id}`);
    try {
      expect(await kindOf(sessions.remove('held'))).toBe('busy');
      await sessions.remove('held', true);
      expect(existsSync(store.handleFile(handle.id))).toBe(false);
    } finally {
      await held.release();
    }
  });

  it('start --replace removes the handle holding the name first; without it the name is refused', async () => {
    const old = await start('one', { name: 'nightly' });
    const refused = await start('two', { name: 'nightly' }).catch((e) => e);
    expect(refused).toMatchObject({ kind: 'usage' });
    expect(refused.message).toMatch(/--replace/);
    const oldPane = tmux.panes[0]!;
    const fresh = await start('two', { name: 'nightly', replace: true });
    expect(fresh.turn).toMatchObject({ status: 'completed', answer: 'echo: two' });
    expect(oldPane.dead).toBe(true);
    expect(existsSync(store.handleFile(old.handle.id))).toBe(false);
    expect((await store.listHandles()).map((h) => [h.id, h.name])).toEqual([[fresh.handle.id, 'nightly']]);
  });

  it('start --replace never removes a busy handle, nor a handle whose id equals the name', async () => {
    const old = await start('one', { name: 'busy' });
    slowCli();
    expect(await kindOf(sessions.continue({ ref: 'busy', message: 'slow', env, timeoutSeconds: 0.3 }))).toBe('timeout');
    cli.behaviour = (m) => [{ t: 'user', text: m, key: 'k' }, { t: 'answer', text: m }, { t: 'end' }];
    expect(await kindOf(start('two', { name: 'busy', replace: true }))).toBe('busy');
    expect(existsSync(store.handleFile(old.handle.id))).toBe(true);
    expect(await kindOf(start('three', { name: old.handle.id, replace: true }))).toBe('usage');
    expect(existsSync(store.handleFile(old.handle.id))).toBe(true);
  });

  it('a handle file whose inner id differs from its file name is invalid_handle (4) and touched by nothing (issue 40, item 6)', async () => {
    const { handle } = await start('one', { name: 'victim' });
    const pane = tmux.panes[0]!;
    const original = readFileSync(store.handleFile(handle.id), 'utf8');
    const copies: Array<[string, string]> = [
      ['bbbbbbbb', original],
      // Beyond the issue: a copy that also renames itself, and one whose inner id is a longer prefix.
      ['cccccccc', original.replace('"victim"', '"decoy"')],
      [`${handle.id}0`, original],
    ];
    for (const [id, text] of copies) writeFileSync(store.handleFile(id), text);
    for (const [id] of copies) {
      for (const attempt of [sessions.remove(id, true), sessions.remove(id), sessions.continue({ ref: id, message: 'two', env }), sessions.describe(id)]) {
        expect(await attempt.catch((e) => e)).toMatchObject({ kind: 'invalid_handle', exitCode: 4 });
      }
      expect(existsSync(store.handleFile(id))).toBe(true);
    }
    expect(await kindOf(sessions.remove('decoy', true))).toBe('not_found');
    expect(pane.dead).toBe(false);
    for (const file of [store.handleFile(handle.id), store.eventsFile(handle.id), store.turnsDir(handle.id)]) expect(existsSync(file)).toBe(true);
    expect(readFileSync(store.handleFile(handle.id), 'utf8')).toBe(original);
    expect((await sessions.remove('victim')).handle.id).toBe(handle.id);
  });

  /**
   * Issue 40, item 4: `remove --force` while a continue is in flight. The continuing cal sees its
   * pane end (remove ended it), records the handle lost and the turn lost: none of those writes
   * may bring back the handle file, its events, its turn folder or its name.
   */
  it('remove --force racing an in-flight continue: the handle stays removed, the name free', async () => {
    const { handle } = await start('one', { name: 'racer' });
    slowCli();
    const inFlight = sessions.continue({ ref: 'racer', message: 'slow', env, timeoutSeconds: 5 }).catch((e) => e);
    // Deterministic: remove only once the continue holds the lock and its turn is running.
    for (let i = 0; i < 200; i++) {
      const last = await store.lastTurn(handle.id);
      if (last?.message === 'slow' && last.status === 'running') break;
      await new Promise((r) => setTimeout(r, 10));
    }
    expect((await store.lastTurn(handle.id))?.status).toBe('running');
    expect(await kindOf(sessions.remove('racer'))).toBe('busy');
    await sessions.remove('racer', true);
    const ended = await inFlight;
    expect(ended).toMatchObject({ kind: 'not_found' });
    expect(ended.message).toMatch(/removed/);
    for (const file of [store.handleFile(handle.id), store.eventsFile(handle.id), store.turnsDir(handle.id)]) expect(existsSync(file)).toBe(false);
    expect(await store.isNameTaken('racer')).toBe(false);
    expect(await kindOf(sessions.continue({ ref: handle.id, message: 'again', env }))).toBe('not_found');
  });

  /**
   * Issue 41: the continuing cal may see its pane die before the removal deletes anything (here:
   * the removal waits, after ending the pane, until the continue has ended). It must find the
   * handle removed, not record a lost turn and suggest continuing a handle that is gone.
   */
  it('a continue killed by remove --force never suggests continuing the removed handle', async () => {
    const { handle } = await start('one', { name: 'doomed' });
    slowCli();
    let continued: unknown;
    const inFlight = sessions.continue({ ref: 'doomed', message: 'slow', env, timeoutSeconds: 10 }).then(
      (r) => (continued = r),
      (e: unknown) => (continued = e),
    );
    for (let i = 0; i < 200 && (await store.lastTurn(handle.id))?.status !== 'running'; i++) await new Promise((r) => setTimeout(r, 10));
    const kill = tmux.killSession.bind(tmux);
    tmux.killSession = async (session) => {
      const killed = await kill(session);
      await inFlight;
      return killed;
    };
    await sessions.remove('doomed', true);
    expect(continued).toMatchObject({ kind: 'not_found' });
    expect((continued as Error).message).toMatch(/was removed/);
    expect((continued as Error).message).not.toMatch(/continue again|cal continue/);
    for (const file of [store.handleFile(handle.id), store.eventsFile(handle.id), store.turnsDir(handle.id)]) expect(existsSync(file)).toBe(false);
  });

  it('start --replace on a busy name suggests cal remove --force, never a --force start lacks', async () => {
    await start('one', { name: 'held' });
    slowCli();
    expect(await kindOf(sessions.continue({ ref: 'held', message: 'slow', env, timeoutSeconds: 0.3 }))).toBe('timeout');
    const refused = await start('two', { name: 'held', replace: true }).catch((e) => e);
    expect(refused).toMatchObject({ kind: 'busy' });
    expect(refused.message).toMatch(/remove it first with cal remove --force held\b/);
    expect(refused.message).not.toMatch(/or pass --force/);
    const removeRefused = await sessions.remove('held').catch((e) => e);
    expect(removeRefused.message).toMatch(/or pass --force/);
  });

  it('a write of a removed handle (a continue that loaded it before the removal) never recreates it', async () => {
    const { handle } = await start('one', { name: 'ghost' });
    await sessions.remove('ghost');
    const saved = await store.saveHandle({ ...handle, provider: { ...handle.provider, status: 'lost' } }).catch((e) => e);
    expect(saved).toMatchObject({ kind: 'not_found' });
    const turn = (await store.listTurns(handle.id))[0];
    expect(turn).toBeUndefined();
    const event = await store.appendEvent({ time: new Date().toISOString(), handle: handle.id, event: 'lost' }).catch((e) => e);
    expect(event).toMatchObject({ kind: 'not_found' });
    for (const file of [store.handleFile(handle.id), store.eventsFile(handle.id), store.turnsDir(handle.id)]) expect(existsSync(file)).toBe(false);
    expect(await store.isNameTaken('ghost')).toBe(false);
  });
});
