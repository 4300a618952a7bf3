import { readdirSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentSessions } from '../../src/sessions/agent-sessions.js';
import type { StateStore } from '../../src/state/store.js';
import type { TurnRecord } from '../../src/state/turns.js';
import { kindOf } from '../support/errors.js';
import { type FakeCli, type FakeTmux, fakeSessions } from '../support/fake-engine.js';
import { removeScratch } from '../support/scratch.js';

/**
 * `cancel(ref)` (issue 41) over the fake engine: the turn in flight is found through cal's
 * records and cancelled by the call running it; an idle handle is left alone; a turn whose cal is
 * gone is settled as recover settles it.
 */
const DEAD_PID = 999_999_9;

describe('cancel from another caller', () => {
  let root: string;
  let store: StateStore;
  let cli: FakeCli;
  let tmux: FakeTmux;
  let sessions: AgentSessions;
  const env = { PATH: process.env.PATH ?? '' };

  beforeEach(async () => {
    ({ root, store, cli, tmux, sessions } = await fakeSessions('cancel-fake'));
  });
  afterEach(async () => removeScratch(root));

  const start = (message: string) => sessions.start({ provider: 'claude-code', message, cwd: root, env, timeoutSeconds: 5 });

  it('an idle handle: nothing is done, nothing recorded', async () => {
    const { handle } = await start('one');
    const before = await store.listTurns(handle.id);
    expect(await sessions.cancel(handle.id, { env })).toMatchObject({ action: 'idle', turn: null });
    expect(await store.listTurns(handle.id)).toEqual(before);
  });

  it('a turn in flight: the call running it ends interrupted and frees the handle; the request file goes with the turn', async () => {
    const { handle } = await start('one');
    // The CLI records the message and never answers (a model that holds its reply).
    cli.behaviour = (m) => [{ t: 'user', text: m, key: `k-${m}` }];
    const owner = sessions.continue({ ref: handle.id, message: 'held', env, timeoutSeconds: 30 }).catch((e: unknown) => e);
    for (let i = 0; i < 100 && (await store.lastTurn(handle.id))?.status !== 'running'; i++) await new Promise((r) => setTimeout(r, 50));
    const t0 = Date.now();
    const cancelled = await sessions.cancel(handle.id, { env });
    expect(cancelled).toMatchObject({ action: 'cancelled', turn: { message: 'held', status: 'interrupted' } });
    expect(await owner).toMatchObject({ turn: { message: 'held', status: 'interrupted' } });
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(readdirSync(store.turnsDir(handle.id)).filter((f) => f.endsWith('.cancel'))).toEqual([]);
    cli.behaviour = (m) => [{ t: 'user', text: m, key: `k-${m}` }, { t: 'answer', text: `echo: ${m}` }, { t: 'end' }];
    expect((await sessions.continue({ ref: handle.id, message: 'next', env, timeoutSeconds: 5 })).turn).toMatchObject({ status: 'completed', answer: 'echo: next' });
  });

  it('a turn whose cal died: settled as recover settles it (from the transcript)', async () => {
    const { handle } = await start('one');
    cli.behaviour = (m) => [{ t: 'user', text: m, key: `k-${m}` }];
    expect(await kindOf(sessions.continue({ ref: handle.id, message: 'orphan', env, timeoutSeconds: 0.6 }))).toBe('timeout');
    const open = (await store.listTurns(handle.id)).find((t) => t.message === 'orphan') as TurnRecord;
    await fs.writeFile(path.join(store.turnsDir(handle.id), `${open.id}.json`), JSON.stringify({ ...open, ownerPid: DEAD_PID }));
    // The CLI finished it meanwhile: recover reads the end from the transcript.
    cli.write(cli.sessionOf(tmux.panes[0]!), [{ t: 'answer', text: 'late' }, { t: 'end' }]);
    const result = await sessions.cancel(handle.id, { env, timeoutSeconds: 5 });
    expect(result).toMatchObject({ action: 'recovered', turn: { id: open.id, status: 'completed', answer: 'late' } });
    expect(result.recovered.map((r) => r.turn)).toEqual([open.id]);
  });
});
