import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

/** Every fsync cal makes, by the path of the file descriptor it was made on. */
const synced: string[] = [];
const fdPaths = new Map<number, string>();
vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>();
  const openSync = ((file: string, ...rest: unknown[]) => {
    const fd = (real.openSync as (...a: unknown[]) => number)(file, ...rest);
    fdPaths.set(fd, String(file));
    return fd;
  }) as typeof real.openSync;
  const fsyncSync = ((fd: number) => {
    synced.push(fdPaths.get(fd) ?? `fd ${fd}`);
    return real.fsyncSync(fd);
  }) as typeof real.fsyncSync;
  return { ...real, default: { ...real, openSync, fsyncSync }, openSync, fsyncSync };
});

const { StateStore } = await import('../../src/state/store.js');
const { newTurn } = await import('../../src/sessions/turn-journal.js');
const { unsentStatuses } = await import('../../src/state/turns.js');

/**
 * Design §5: a turn record is on disk, durably, before anything is sent. The `sending` record is
 * the one written before the send, so it and every later one are fsynced; the records before it
 * (queued, waiting for the lock) say only that nothing was sent yet, and are written without.
 */
describe('turn records and fsync', () => {
  let root: string;
  beforeAll(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'cal-durability-'));
  });
  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it('the unsent statuses are queued and waiting_for_lock, and nothing else', () => {
    expect([...unsentStatuses].sort()).toEqual(['queued', 'waiting_for_lock']);
  });

  it('queued and waiting_for_lock are written without an fsync; sending, running and the end with one each', async () => {
    const store = await StateStore.open(path.join(root, 'state'));
    const journal = await newTurn(store, 'h000000001', 'hello');
    const file = (name: string) => name.startsWith(path.join(store.layout.root, 'turns', 'h000000001', journal.turn.id));
    const turnSyncs = () => synced.filter(file).length;
    expect(turnSyncs()).toBe(0);
    await journal.set('waiting_for_lock');
    expect(turnSyncs()).toBe(0);
    const written = JSON.parse(await fs.readFile(path.join(store.layout.root, 'turns', 'h000000001', `${journal.turn.id}.json`), 'utf8'));
    expect(written.status).toBe('waiting_for_lock');
    await journal.set('sending', { ownerPid: process.pid });
    expect(turnSyncs()).toBe(1);
    await journal.set('running', { turnKey: 'k1' });
    expect(turnSyncs()).toBe(2);
    await journal.set('completed', { answer: 'hi' });
    expect(turnSyncs()).toBe(3);
    const done = JSON.parse(await fs.readFile(path.join(store.layout.root, 'turns', 'h000000001', `${journal.turn.id}.json`), 'utf8'));
    expect([done.status, done.answer]).toEqual(['completed', 'hi']);
  });

  it('a turn that fails before its send (busy) is fsynced: it has ended', async () => {
    const store = await StateStore.open(path.join(root, 'state2'));
    const journal = await newTurn(store, 'h000000002', 'hello');
    const before = synced.length;
    await journal.set('failed', { error: { kind: 'busy', message: 'busy' } });
    expect(synced.length).toBe(before + 1);
  });
});
