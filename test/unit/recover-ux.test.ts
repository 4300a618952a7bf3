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
 * Issue 20, item 9: `recover --dry-run` reports the outcome it plans, not the status the turn is
 * in; `--retry-lost` still finds a lost last turn after a plain recover marked it lost.
 */
const DEAD_PID = 999_999_9;

describe('recover: planned outcomes and lost turns (fake CLI, fake tmux)', () => {
  let root: string;
  let store: StateStore;
  let cli: FakeCli;
  let tmux: FakeTmux;
  let sessions: AgentSessions;
  const env = { PATH: process.env.PATH ?? '' };

  beforeEach(async () => {
    ({ root, store, cli, tmux, sessions } = await fakeSessions('recover-ux'));
  });
  afterEach(async () => removeScratch(root));

  const echo = () => {
    cli.behaviour = (m) => [{ t: 'user', text: m, key: `k-${m}` }, { t: 'answer', text: `echo: ${m}` }, { t: 'end' }];
  };
  /** A turn the CLI took and is still working on, whose cal is gone; `finish` writes its end. */
  async function orphanTurn(message: string): Promise<{ handle: string; turn: TurnRecord; finish: () => void }> {
    const { handle } = await sessions.start({ provider: 'claude-code', message: 'one', cwd: root, env, timeoutSeconds: 5 });
    let finish = () => undefined as void;
    cli.behaviour = (m, pane) => {
      const id = cli.sessionOf(pane);
      finish = () => cli.write(id, [{ t: 'answer', text: `late: ${m}` }, { t: 'end' }]);
      return [{ t: 'user', text: m, key: `k-${m}` }];
    };
    expect(await kindOf(sessions.continue({ ref: handle.id, message, env, timeoutSeconds: 0.5 }))).toBe('timeout');
    const turn = (await store.listTurns(handle.id)).find((t) => t.message === message) as TurnRecord;
    await fs.writeFile(path.join(store.turnsDir(handle.id), `${turn.id}.json`), JSON.stringify({ ...turn, ownerPid: DEAD_PID }));
    return { handle: handle.id, turn, finish: () => finish() };
  }

  it('--dry-run shows the outcome the transcript settles the turn with, and changes nothing', async () => {
    const { handle, turn, finish } = await orphanTurn('slow');
    finish();
    await new Promise((r) => setTimeout(r, 50));
    const items = await sessions.recover({ env, dryRun: true });
    expect(items).toEqual([expect.objectContaining({ turn: turn.id, before: 'running', action: 'settled_from_transcript', status: 'completed', answer: 'late: slow' })]);
    expect((await store.listTurns(handle)).find((t) => t.id === turn.id)?.status).toBe('running');
  });

  it('--dry-run on a turn whose pane died says lost (or, with --retry-lost, that it is sent again)', async () => {
    const { turn } = await orphanTurn('dies');
    for (const p of tmux.panes) p.dead = true;
    expect(await sessions.recover({ env, dryRun: true })).toEqual([expect.objectContaining({ turn: turn.id, action: 'marked_lost', status: 'lost' })]);
    expect(await sessions.recover({ env, dryRun: true, retryLost: true })).toEqual([expect.objectContaining({ turn: turn.id, action: 'retried_lost', status: 'sending' })]);
  });

  it('--retry-lost after a plain recover marked the turn lost: sent again once, as a new turn', async () => {
    const { handle, turn } = await orphanTurn('dies');
    for (const p of tmux.panes) p.dead = true;
    expect(await sessions.recover({ env })).toEqual([expect.objectContaining({ turn: turn.id, action: 'marked_lost', status: 'lost' })]);
    echo();
    const retried = await sessions.recover({ env, retryLost: true, timeoutSeconds: 5 });
    expect(retried).toEqual([expect.objectContaining({ action: 'retried_lost', status: 'completed', answer: 'echo: dies', message: 'dies' })]);
    expect(retried[0]?.turn).not.toBe(turn.id);
    // The retry is now the last turn: nothing left to retry.
    expect(await sessions.recover({ env, retryLost: true })).toEqual([]);
    expect((await store.listTurns(handle)).map((t) => [t.message, t.status])).toEqual([['one', 'completed'], ['dies', 'lost'], ['dies', 'completed']]);
  });
});
