import { execFileSync } from 'node:child_process';
import { lstatSync, readdirSync, statSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readJsonFile, readJsonLinesSince, writeJsonAtomic } from '../../src/state/fs.js';
import { StateStore } from '../../src/state/store.js';
import { TurnRecord } from '../../src/state/turns.js';
import { scratchDir } from '../support/cal.js';
import { removeScratch } from '../support/scratch.js';

/**
 * The store's cheap reads (a handle's last turn and next seq from the turn files' names, not by
 * parsing every turn) agree with the full listing, and its files are read and written safely.
 */
const turn = (handleId: string, seq: number, id = `t${String(seq).padStart(4, '0')}-abc${seq}`): TurnRecord => ({
  schemaVersion: 1,
  id,
  handleId,
  seq,
  message: `m${seq}`,
  status: 'completed',
  turnKey: null,
  answer: `a${seq}`,
  error: null,
  tools: [],
  ownerPid: null,
  ownerStartTime: null,
  correlationId: null,
  sentAt: null,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
});

describe('state store', () => {
  let root: string;
  let store: StateStore;

  beforeEach(async () => {
    root = await scratchDir('state-store');
    store = await StateStore.open(path.join(root, 'state'));
  });

  afterEach(async () => {
    await removeScratch(root);
  });

  it('lastTurn and nextTurnSeq agree with listTurns, past seq 9999 too', async () => {
    expect(await store.lastTurn('h1')).toBeNull();
    expect(await store.nextTurnSeq('h1')).toBe(1);
    for (const seq of [1, 2, 3, 9999, 10000]) await store.saveTurn(turn('h1', seq));
    const all = await store.listTurns('h1');
    expect(all.map((t) => t.seq)).toEqual([1, 2, 3, 9999, 10000]);
    expect(await store.lastTurn('h1')).toEqual(all.at(-1));
    expect(await store.nextTurnSeq('h1')).toBe(10001);
  });

  it('an unreadable last turn is passed over, as listTurns does; a gap does not reuse a seq', async () => {
    await store.saveTurn(turn('h2', 1));
    await store.saveTurn(turn('h2', 2));
    await fs.writeFile(path.join(store.turnsDir('h2'), 't0005-broken.json'), '{"torn":');
    expect((await store.lastTurn('h2'))?.seq).toBe(2);
    expect((await store.lastTurn('h2'))?.id).toBe((await store.listTurns('h2')).at(-1)?.id);
    expect(await store.nextTurnSeq('h2')).toBe(6);
  });

  it('a .json file not named like a turn record: its content decides', async () => {
    await store.saveTurn(turn('h3', 1));
    await store.saveTurn(turn('h3', 7, 'renamed'));
    expect((await store.lastTurn('h3'))?.seq).toBe(7);
    expect(await store.nextTurnSeq('h3')).toBe(8);
  });

  it('writes are atomic, 0600, in call order, and leave no temp file', async () => {
    const file = path.join(store.layout.handles, 'doc.json');
    await Promise.all(Array.from({ length: 20 }, (_, i) => writeJsonAtomic(file, { i })));
    expect(JSON.parse(await fs.readFile(file, 'utf8'))).toEqual({ i: 19 });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(store.layout.handles)).toEqual(['doc.json']);
  });

  it('a write through a symlink is refused and the link target is untouched', async () => {
    const target = path.join(root, 'outside.json');
    await fs.writeFile(target, '"keep"');
    const link = path.join(store.layout.handles, 'link.json');
    await fs.symlink(target, link);
    await expect(writeJsonAtomic(link, { x: 1 })).rejects.toMatchObject({ kind: 'invalid_handle' });
    expect(await fs.readFile(target, 'utf8')).toBe('"keep"');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
  });

  it('a FIFO or a folder in place of a state file is refused at once, never waited on', async () => {
    const fifo = path.join(store.layout.handles, 'fifo.json');
    execFileSync('mkfifo', [fifo]);
    const dir = path.join(store.layout.handles, 'dir.json');
    await fs.mkdir(dir);
    expect(await readJsonFile(fifo, TurnRecord)).toEqual({ ok: false, reason: 'corrupt', detail: 'it is a FIFO' });
    expect(await readJsonFile(dir, TurnRecord)).toEqual({ ok: false, reason: 'corrupt', detail: 'it is a directory' });
    expect(() => readJsonLinesSince(fifo, null)).toThrow(expect.objectContaining({ kind: 'invalid_handle' }));
    expect(() => readJsonLinesSince(dir, null)).toThrow(expect.objectContaining({ kind: 'invalid_handle' }));
  });
});
