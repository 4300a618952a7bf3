import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CalError } from '../../src/errors.js';
import { isProcessAlive, processStartTime } from '../../src/state/lock.js';
import { StateStore } from '../../src/state/store.js';
import { scratchDir } from '../support/cal.js';
import { kindOf } from '../support/errors.js';
import { removeScratch } from '../support/scratch.js';

/**
 * Issue 13, items 8 and 10: what is planted in the state directory (a FIFO, a folder, a lock of
 * an impossible owner) is refused or reclaimed at once; nothing hangs and nothing is sent.
 */

/** Resolves or rejects within `ms`, else fails: a FIFO would otherwise hang the call forever. */
function within<T>(p: Promise<T>, ms = 3000): Promise<T> {
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`hung for ${ms} ms`)), ms))]);
}

const mkfifo = (file: string) => execFileSync('mkfifo', ['-m', '600', file]);

describe('state hardening', () => {
  let root: string;
  let store: StateStore;

  beforeEach(async () => {
    root = await scratchDir('state-hardening');
    store = await StateStore.open(path.join(root, 'state'));
  });
  afterEach(async () => removeScratch(root));

  it.each([
    ['a FIFO', (f: string) => mkfifo(f)],
    ['a directory', (f: string) => fs.mkdir(f)],
  ])('a handle file that is %s: invalid_handle by id, and lookups by name and listings go on', async (_what, plant) => {
    await plant(path.join(store.layout.handles, 'abcdef123.json'));
    expect(await within(kindOf(store.loadHandle('abcdef123')))).toBe('invalid_handle');
    expect(await within(kindOf(store.loadHandle('some-name')))).toBe('not_found');
    expect(await within(store.listHandles())).toEqual([]);
    expect(await within(store.isNameTaken('x'))).toBe(false);
  });

  it.each([
    ['a FIFO', (f: string) => mkfifo(f)],
    ['a directory', (f: string) => fs.mkdir(f)],
  ])('an event log or turn record that is %s is refused without hanging', async (_what, plant) => {
    const events = path.join(store.layout.handles, 'abcdef123.events.jsonl');
    await plant(events);
    expect(await within(kindOf(store.readEvents('abcdef123')))).toBe('invalid_handle');
    expect(await within(kindOf(store.appendEvent({ time: new Date().toISOString(), handle: 'abcdef123', event: 'x' })))).toBe('invalid_handle');
    const turns = store.turnsDir('abcdef123');
    await fs.mkdir(turns, { mode: 0o700 });
    await plant(path.join(turns, 't0001-aaaaaa.json'));
    // An unreadable turn record is passed over by listings, never hung on.
    expect(await within(store.listTurns('abcdef123'))).toEqual([]);
  });

  it.each([
    ['pid 0', { pid: 0, startTime: '1' }],
    ['pid -1', { pid: -1, startTime: '1' }],
    ['pid 1.5', { pid: 1.5, startTime: '1' }],
    ['pid 1 with no start time', { pid: 1, startTime: null }],
    ['this process with a start time that is not its own', { pid: process.pid, startTime: 'not-the-start-time' }],
  ])('a lock held by %s is reclaimed at once', async (_what, owner) => {
    const lockFile = path.join(store.layout.locks, 'handle-abcdef123.lock');
    await fs.writeFile(lockFile, JSON.stringify({ ...owner, token: 'planted', acquiredAt: new Date().toISOString() }), { mode: 0o600 });
    const lock = await within(store.locks.acquire('handle-abcdef123'));
    await lock.release();
  });

  it('malformed and FIFO queue tickets do not hold the line', async () => {
    const queue = path.join(store.layout.locks, 'handle-abcdef123.queue');
    await fs.mkdir(queue, { mode: 0o700 });
    await fs.writeFile(path.join(queue, '000-garbage'), 'not json');
    await fs.writeFile(path.join(queue, '0000000000000000000000001-0-deadbeef'), JSON.stringify({ pid: 0, startTime: null, token: 't', acquiredAt: '' }));
    mkfifo(path.join(queue, '0000000000000000000000002-abc-fifo'));
    const lock = await within(store.locks.acquire('handle-abcdef123', { waitSeconds: 2 }));
    await lock.release();
  });

  it('a live process is still alive to the lock (the checks do not reclaim a real holder)', () => {
    expect(isProcessAlive(process.pid, processStartTime(process.pid))).toBe(true);
  });
});

describe('names and turn numbers under concurrency', () => {
  let root: string;
  let store: StateStore;

  beforeEach(async () => {
    root = await scratchDir('names');
    store = await StateStore.open(path.join(root, 'state'));
  });
  afterEach(async () => removeScratch(root));

  it('a name equal to another handle’s id, or carried by a corrupt handle file, is taken', async () => {
    await fs.writeFile(path.join(store.layout.handles, 'abcdef123.json'), JSON.stringify({ schemaVersion: 1, name: 'nightly', broken: true }), { mode: 0o600 });
    expect(await store.isNameTaken('nightly')).toBe(true);
    expect(await store.isNameTaken('abcdef123')).toBe(true);
    expect(await store.isNameTaken('free-name')).toBe(false);
    expect((await store.unreadableHandles()).map((u) => u.name)).toEqual(['nightly']);
  });

  it('turns created at once get distinct sequence numbers', async () => {
    const { newTurn } = await import('../../src/sessions/turn-journal.js');
    const journals = await Promise.all(Array.from({ length: 8 }, (_, i) => newTurn(store, 'abcdef123', `m${i}`)));
    const seqs = journals.map((j) => j.turn.seq).sort((a, b) => a - b);
    expect(seqs).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    await fs.writeFile(path.join(store.turnsDir('abcdef123'), 't0009-torn00.json'), '{"torn":');
    expect((await newTurn(store, 'abcdef123', 'after a torn record')).turn.seq).toBe(10);
    expect(await store.unreadableTurns('abcdef123')).toHaveLength(1);
  });
});

describe('one name, one handle', () => {
  it('five concurrent starts with one --name create one handle; the others are usage errors', async () => {
    const { startModelServer } = await import('../../src/model/server.js');
    const { AgentSessions } = await import('../../src/sessions/agent-sessions.js');
    const server = await startModelServer({});
    const root = await scratchDir('names-race');
    try {
      const store = await StateStore.open(path.join(root, 'state'));
      const env = { PATH: process.env.PATH ?? '', ANTHROPIC_BASE_URL: server.url, ANTHROPIC_API_KEY: 'test-key' };
      const starts = await Promise.allSettled(
        Array.from({ length: 5 }, () => new AgentSessions(store).start({ provider: 'anthropic', name: 'shared', message: 'Remember the codeword FIVE.', cwd: root, env })),
      );
      expect(starts.filter((s) => s.status === 'fulfilled')).toHaveLength(1);
      for (const s of starts.filter((r): r is PromiseRejectedResult => r.status === 'rejected')) expect((s.reason as CalError).kind).toBe('usage');
      expect((await store.listHandles()).filter((h) => h.name === 'shared')).toHaveLength(1);
    } finally {
      await server.close();
      await removeScratch(root);
    }
  });
});

describe('unreadable records are reported by the commands', () => {
  it('inspect lists a corrupt handle file (JSON and on stderr); recover takes --timeout', async () => {
    const { runCal } = await import('../support/cal.js');
    const root = await scratchDir('unreadable');
    try {
      const state = path.join(root, 'state');
      const store = await StateStore.open(state);
      await fs.writeFile(path.join(store.layout.handles, 'abcdef123.json'), JSON.stringify({ schemaVersion: 1, name: 'nightly', id: 'abcdef123' }), { mode: 0o600 });
      const json = await runCal(['--state-dir', state, 'inspect', '--json']);
      expect(json.code).toBe(0);
      expect(json.json.unreadable).toEqual([expect.objectContaining({ name: 'nightly', file: expect.stringContaining('abcdef123.json') })]);
      const plain = await runCal(['--state-dir', state, 'inspect']);
      expect(plain.stderr).toMatch(/unreadable handle .*abcdef123\.json \(name nightly\)/);
      const rec = await runCal(['--state-dir', state, 'recover', '--timeout', '5', '--json']);
      expect(rec.code, rec.stderr).toBe(0);
      expect(rec.json.turns).toEqual([]);
    } finally {
      await removeScratch(root);
    }
  });
});
