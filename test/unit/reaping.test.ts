import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentSessions } from '../../src/sessions/agent-sessions.js';
import { handleLockName } from '../../src/sessions/context.js';
import type { StateStore } from '../../src/state/store.js';
import { type FakeCli, type FakeTmux, fakeSessions } from '../support/fake-engine.js';
import { removeScratch } from '../support/scratch.js';
import { readPlan } from '../../src/workflow/plan.js';
import { executeRun, newRun } from '../../src/workflow/runner.js';

/**
 * Issue 42, item 1: idle panes are reaped by the state directory's policy (config.json) when a
 * turn ends and by `reap`, least recently used first; never a pane with a turn in flight, a
 * terminal attached or a possible draft. A reaped session resumes natively on its next continue.
 */
describe('reaping idle panes (fake CLI, fake tmux)', () => {
  let root: string;
  let store: StateStore;
  let cli: FakeCli;
  let tmux: FakeTmux;
  let sessions: AgentSessions;
  const env = { PATH: process.env.PATH ?? '' };

  beforeEach(async () => {
    ({ root, store, cli, tmux, sessions } = await fakeSessions('reap-fake'));
  });
  afterEach(async () => removeScratch(root));

  const policy = (reap: Record<string, unknown>) => writeFileSync(path.join(store.layout.root, 'config.json'), JSON.stringify({ reap }));
  const start = (message: string) => sessions.start({ provider: 'claude-code', message, cwd: root, env, timeoutSeconds: 5 });
  const livePanes = () => tmux.panes.filter((p) => !p.dead);
  /** The handles whose records name a current pane. */
  const recordedLive = async () => (await store.listHandles()).filter((h) => h.provider.tmux !== null).map((h) => h.provider.tmux!.paneId).sort();

  it('with at most 2 live panes, 5 sessions continued in turn leave 2 panes; records and tmux agree; each resumes natively', async () => {
    policy({ maxLive: 2 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await start(`hello ${i}`)).handle.id);
      expect(livePanes().length).toBeLessThanOrEqual(2);
    }
    expect(await recordedLive()).toEqual(livePanes().map((p) => p.id).sort());
    for (const id of ids) {
      const { turn } = await sessions.continue({ ref: id, message: `again ${id}`, env, timeoutSeconds: 5 });
      expect(turn.status).toBe('completed');
      expect(livePanes().length).toBeLessThanOrEqual(2);
      expect(await recordedLive()).toEqual(livePanes().map((p) => p.id).sort());
    }
    const first = await store.loadHandle(ids[0]!);
    expect(first.panes[0]!.launch).toBe('resume');
    expect([first.panes.at(-1)!.launch, first.panes.at(-1)!.endReason?.replace(/:.*/, '')]).toEqual(['fresh', 'reaped']);
    expect((await store.readEvents(ids[0]!)).map((e) => e.event)).toContain('pane_reaped');
    expect((await store.readEvents(ids[0]!)).map((e) => e.event)).not.toContain('lost_tmux');
  });

  it('never reaps a pane with a terminal attached, one attached since its last turn with a draft in its box, or one whose turn is in flight', async () => {
    policy({ auto: false });
    const [a, b, c, d, e] = [await start('a'), await start('b'), await start('c'), await start('d'), await start('e')];
    const paneOf = (id: string) => tmux.panes.find((p) => p.session.startsWith(`cal-${id}-`))!;
    paneOf(a.handle.id).clients = 1;
    paneOf(b.handle.id).lastAttached = Math.ceil(Date.now() / 1000) + 5;
    paneOf(b.handle.id).box = 'half typed';
    // Attached once, its box left empty: reaped like any other (issue 52).
    paneOf(e.handle.id).lastAttached = Math.ceil(Date.now() / 1000) + 5;
    const held = await store.locks.acquire(handleLockName(c.handle.id));
    const items = await sessions.reap({ idleSeconds: 0 });
    await held.release();
    const byHandle = Object.fromEntries(items.map((i) => [i.handle, i]));
    expect(byHandle[a.handle.id]).toMatchObject({ action: 'kept', reason: 'a terminal is attached' });
    expect(byHandle[b.handle.id]).toMatchObject({ action: 'kept', reason: 'a terminal was attached since its last turn and its input box holds a draft' });
    expect(byHandle[c.handle.id]).toMatchObject({ action: 'kept', reason: 'a turn is in flight' });
    expect(byHandle[d.handle.id]).toMatchObject({ action: 'reaped', reason: expect.stringMatching(/^idle/) });
    expect(byHandle[e.handle.id]).toMatchObject({ action: 'reaped', reason: expect.stringMatching(/^idle/) });
    expect(livePanes().map((p) => p.session.split('-')[1]).sort()).toEqual([a.handle.id, b.handle.id, c.handle.id].sort());
  });

  it('a dry run says what it would end and ends nothing; the least recently used goes first', async () => {
    policy({ auto: false, idleSeconds: null });
    const [a, b, c] = [await start('a'), await start('b'), await start('c')];
    const items = await sessions.reap({ maxLive: 1, dryRun: true });
    expect(items.map((i) => [i.handle, i.action])).toEqual([
      [a.handle.id, 'would_reap'],
      [b.handle.id, 'would_reap'],
      [c.handle.id, 'kept'],
    ]);
    expect(livePanes()).toHaveLength(3);
  });

  it('an unreadable config is a usage error naming the file, not the defaults', async () => {
    writeFileSync(path.join(store.layout.root, 'config.json'), JSON.stringify({ reap: { maxLive: 0 } }));
    await expect(sessions.reap({})).rejects.toMatchObject({ kind: 'usage', message: expect.stringContaining('config.json') });
  });

  it('a start whose first turn failed ends its pane', async () => {
    cli.behaviour = (m) => [{ t: 'user', text: m, key: 'k1' }, { t: 'error', text: 'the model refused' }];
    const { turn } = await start('fail please');
    expect(turn.status).toBe('failed');
    expect(livePanes()).toEqual([]);
  });

  it('cal run names the session it starts when the plan says session.name', async () => {
    const file = path.join(root, 'plan.yaml');
    writeFileSync(file, `version: 1\nsession:\n  provider: claude-code\n  name: nightly-loop\n  cwd: .\nphases:\n  - id: one\n    message: hi\n`);
    const run = await executeRun(store, sessions, newRun(file, await readPlan(file)), { env });
    expect(run.status).toBe('completed');
    expect((await store.loadHandle('nightly-loop')).id).toBe(run.handle);
  });
});
