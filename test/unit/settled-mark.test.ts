import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CalError } from '../../src/errors.js';
import type { AgentSessions } from '../../src/sessions/agent-sessions.js';
import { processStartTime } from '../../src/state/lock.js';
import type { StateStore } from '../../src/state/store.js';
import type { TurnRecord } from '../../src/state/turns.js';
import { type FakeCli, fakeSessions } from '../support/fake-engine.js';
import { removeScratch } from '../support/scratch.js';

/**
 * Before each turn a continue settles the earlier turns its CLI may still have. It reads only the
 * records the handle's settled mark leaves open (issue 17): however long the session, a continue
 * reads a few records, and a turn that may still need settling is read every time until it is
 * settled. A fake CLI and a fake tmux (no binaries).
 */
const DEAD_PID = 999_999_9;

describe('settling earlier turns reads only what can still be unsettled', () => {
  let root: string;
  let store: StateStore;
  let sessions: AgentSessions;
  let cli: FakeCli;
  const env = { PATH: process.env.PATH ?? '' };

  beforeEach(async () => {
    ({ root, store, sessions, cli } = await fakeSessions('settled-mark'));
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await removeScratch(root);
  });

  const cont = (ref: string, message: string) => sessions.continue({ ref, message, env, timeoutSeconds: 5 });

  async function session(turns: number): Promise<string> {
    const { handle } = await sessions.start({ provider: 'claude-code', message: 'm1', cwd: root, env, timeoutSeconds: 5 });
    for (let i = 2; i <= turns; i++) await cont(handle.id, `m${i}`);
    return handle.id;
  }

  /** The turn records the next continue's settling reads (every read goes through turnsWhere or listTurns). */
  async function recordsReadBy(run: () => Promise<unknown>): Promise<{ read: TurnRecord[]; listed: number }> {
    const where = vi.spyOn(store, 'turnsWhere');
    const list = vi.spyOn(store, 'listTurns');
    try {
      await run();
      const read = (await Promise.all(where.mock.results.map((r) => r.value as ReturnType<StateStore['turnsWhere']>))).flatMap((r) => (r ?? []).flatMap((e) => (e.turn ? [e.turn] : [])));
      return { read, listed: list.mock.calls.length };
    } finally {
      where.mockRestore();
      list.mockRestore();
    }
  }

  /** A record as another cal writes it: `patch` over a finished turn's fields. */
  async function writeTurn(handleId: string, seq: number, tag: string, patch: Partial<TurnRecord>): Promise<TurnRecord> {
    const now = new Date().toISOString();
    const turn: TurnRecord = {
      schemaVersion: 1, id: `t${String(seq).padStart(4, '0')}-${tag}`, handleId, seq, message: tag, status: 'completed', turnKey: null, answer: null, error: null,
      tools: [], ownerPid: null, ownerStartTime: null, correlationId: null, sentAt: now, createdAt: now, updatedAt: now, ...patch,
    };
    await fs.writeFile(path.join(store.turnsDir(handleId), `${turn.id}.json`), JSON.stringify(turn));
    return turn;
  }

  it('a continue of a 60-turn session reads a few turn records, not all of them', async () => {
    const id = await session(60);
    const { read, listed } = await recordsReadBy(() => cont(id, 'one more'));
    expect(listed).toBe(0);
    expect(read.length).toBeGreaterThan(0);
    expect(read.length).toBeLessThanOrEqual(10);
    // What it read is the newest records, the new turn's own among them.
    expect(read.map((t) => t.message)).toContain('one more');
    expect(Math.min(...read.map((t) => t.seq))).toBeGreaterThan(50);
    const mark = await store.settledMark(id);
    expect(mark.open).toEqual([]);
    expect(mark.through).toBeGreaterThanOrEqual(52);
    expect((await store.listTurns(id)).map((t) => t.status)).toEqual(Array(61).fill('completed'));
  });

  it('a turn passed over while its cal lived stays open in the mark, and is found once that cal is gone', async () => {
    const id = await session(12);
    // A turn another (live) cal owns is its own: the continues below pass over it.
    const parent = process.ppid;
    const ghost = await writeTurn(id, 13, 'ghost1', { status: 'running', ownerPid: parent, ownerStartTime: processStartTime(parent) });
    for (let i = 14; i <= 40; i++) await cont(id, `m${i}`);
    const mark = await store.settledMark(id);
    expect(mark.through).toBeGreaterThan(30);
    expect(mark.open).toEqual([13]);

    // Far below the mark's line, it is still read by every continue.
    const { read } = await recordsReadBy(() => cont(id, 'm41'));
    expect(read.map((t) => t.id)).toContain(ghost.id);
    expect(read.length).toBeLessThanOrEqual(12);

    // Its cal died with the turn running: the next continue must settle it first. The CLI's pane
    // is alive and its transcript does not have the turn yet, so the handle is busy.
    await writeTurn(id, 13, 'ghost1', { status: 'running', ownerPid: DEAD_PID });
    const busy = await cont(id, 'm42').catch((err: unknown) => err);
    expect(busy).toBeInstanceOf(CalError);
    expect(busy).toMatchObject({ kind: 'busy', message: expect.stringContaining(ghost.id) });

    // Once it is settled, the mark lets it go.
    await writeTurn(id, 13, 'ghost1', { status: 'lost', ownerPid: DEAD_PID });
    await cont(id, 'm43');
    expect((await store.settledMark(id)).open).toEqual([]);
  });

  it("the mark goes by the seq in a record's file name, whatever the record says inside", async () => {
    const id = await session(4);
    const parent = process.ppid;
    // File t0005-oddseq.json, a record inside that says it is turn 99.
    const odd = await writeTurn(id, 5, 'oddseq', { seq: 99, status: 'running', ownerPid: parent, ownerStartTime: processStartTime(parent) });
    for (let i = 6; i <= 16; i++) await cont(id, `m${i}`);
    expect((await store.settledMark(id)).open).toEqual([5]);
    await writeTurn(id, 5, 'oddseq', { seq: 99, status: 'running', ownerPid: DEAD_PID });
    expect(await cont(id, 'm17').catch((err: unknown) => err)).toMatchObject({ kind: 'busy', message: expect.stringContaining(odd.id) });
  });

  it('an unreadable record stays open; a mark past the current turn is not trusted', async () => {
    const id = await session(3);
    await fs.writeFile(path.join(store.turnsDir(id), 't0004-tornab.json'), '{"schemaVersion":1,');
    for (let i = 5; i <= 16; i++) await cont(id, `m${i}`);
    expect((await store.settledMark(id)).open).toEqual([4]);

    // A mark that claims more than the folder holds (not written for these records) is ignored:
    // the turn it would hide is found.
    await fs.writeFile(path.join(store.turnsDir(id), 'unsettled.mark'), JSON.stringify({ through: 1000, open: [] }));
    const ghost = await writeTurn(id, 17, 'ghost2', { status: 'running', ownerPid: DEAD_PID });
    expect(await cont(id, 'm18').catch((err: unknown) => err)).toMatchObject({ kind: 'busy', message: expect.stringContaining(ghost.id) });

    // A mark that cannot be read is no mark: everything is read again.
    await fs.writeFile(path.join(store.turnsDir(id), 'unsettled.mark'), '{"through":');
    expect(await cont(id, 'm19').catch((err: unknown) => err)).toMatchObject({ kind: 'busy', message: expect.stringContaining(ghost.id) });
  });

  it('a symlink or a folder planted as the mark is refused before anything is sent, its target untouched', async () => {
    const id = await session(2);
    const target = path.join(root, 'outside.mark');
    await fs.writeFile(target, JSON.stringify({ through: 1, open: [] }));
    const mark = path.join(store.turnsDir(id), 'unsettled.mark');
    await fs.symlink(target, mark);
    const sent = cli.received.length;
    expect(await cont(id, 'through a link').catch((err: unknown) => err)).toMatchObject({ kind: 'invalid_handle', message: expect.stringMatching(/unsettled\.mark .*symlink/) });
    expect(cli.received.length).toBe(sent);
    expect(await fs.readFile(target, 'utf8')).toBe(JSON.stringify({ through: 1, open: [] }));
    await fs.rm(mark);
    await fs.mkdir(mark);
    expect(await cont(id, 'into a folder').catch((err: unknown) => err)).toMatchObject({ kind: 'invalid_handle', message: expect.stringMatching(/unsettled\.mark .*directory/) });
    expect(cli.received.length).toBe(sent);
  });
});
