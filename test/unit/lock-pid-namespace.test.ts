import { readFileSync, readlinkSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StateStore } from '../../src/state/store.js';
import { scratchDir } from '../support/cal.js';
import { kindOf } from '../support/errors.js';
import { removeScratch } from '../support/scratch.js';

/**
 * Issue 40, item 9: a state directory shared across PID namespaces (a container and its host).
 * A lock records its holder's PID namespace and boot id with the pid; a holder recorded in
 * another namespace of this kernel is never judged dead by its pid (the lock is busy), one
 * recorded under another boot is gone.
 */
const ownNs = readlinkSync('/proc/self/ns/pid');
const ownBoot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
// Above the largest pid Linux hands out (2^22): no process here has it.
const noSuchPid = 4_194_304 + 7;

describe('locks across PID namespaces', () => {
  let root: string;
  let store: StateStore;
  const lockName = 'handle-abcdef123';
  let lockFile: string;

  beforeEach(async () => {
    root = await scratchDir('lock-pidns');
    store = await StateStore.open(path.join(root, 'state'));
    lockFile = path.join(store.layout.locks, `${lockName}.lock`);
  });
  afterEach(async () => removeScratch(root));

  const forge = (owner: Record<string, unknown>) =>
    fs.writeFile(lockFile, JSON.stringify({ pid: noSuchPid, startTime: '12345', token: 'forged', acquiredAt: new Date().toISOString(), ...owner }), { mode: 0o600 });

  it('a lock taken here records the pid namespace and the boot id with the pid', async () => {
    const lock = await store.locks.acquire(lockName);
    expect(JSON.parse(readFileSync(lockFile, 'utf8'))).toMatchObject({ pid: process.pid, pidNs: ownNs, bootId: ownBoot });
    await lock.release();
  });

  for (const pid of [noSuchPid, process.pid, 1]) {
    it(`a holder in another PID namespace (pid ${pid === process.pid ? 'equal to ours' : pid} there) holds the lock: busy, never reclaimed`, async () => {
      await forge({ pid, pidNs: 'pid:[4026599999]', bootId: ownBoot });
      expect(await kindOf(store.locks.acquire(lockName))).toBe('busy');
      expect(await kindOf(store.locks.acquire(lockName, { waitSeconds: 0.3 }))).toBe('busy');
      expect(await store.locks.holder(lockName)).toMatchObject({ token: 'forged' });
      expect(JSON.parse(readFileSync(lockFile, 'utf8'))).toMatchObject({ token: 'forged' });
    });
  }

  it('a holder recorded under another boot is gone: its lock is reclaimed', async () => {
    await forge({ pidNs: 'pid:[4026599999]', bootId: '00000000-0000-0000-0000-000000000000' });
    const lock = await store.locks.acquire(lockName);
    await lock.release();
  });

  it('a dead holder of this namespace (or an older lock with no namespace) is reclaimed as before', async () => {
    await forge({ pidNs: ownNs, bootId: ownBoot });
    await (await store.locks.acquire(lockName)).release();
    await forge({});
    await (await store.locks.acquire(lockName)).release();
  });
});
