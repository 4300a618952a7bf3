import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LockDirectory } from '../../src/state/lock.js';
import { repoRoot } from '../support/clis.js';
import { scratchDir } from '../support/scratch.js';

async function lockDir(): Promise<string> {
  return scratchDir('lock');
}

describe('cross-process locks', () => {
  it('a second caller gets busy at once', async () => {
    const locks = new LockDirectory(await lockDir());
    const held = await locks.acquire('h');
    await expect(locks.acquire('h')).rejects.toMatchObject({ kind: 'busy' });
    await held.release();
    await (await locks.acquire('h')).release();
  });

  it('a caller who would not wait waits for a brief holder (cal reap ending a pane) instead of failing busy (issue 50 item 13)', async () => {
    const locks = new LockDirectory(await lockDir());
    const reaper = await locks.acquire('h', { brief: true });
    const released = new Promise<void>((r) => setTimeout(() => void reaper.release().then(r), 300));
    const started = Date.now();
    const held = await locks.acquire('h');
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    await released;
    // A turn's holder is never brief: the next caller still gets busy at once.
    await expect(locks.acquire('h', { brief: true })).rejects.toMatchObject({ kind: 'busy' });
    await expect(locks.acquire('h')).rejects.toMatchObject({ kind: 'busy' });
    await held.release();
  });

  it('waiters are served in arrival order', async () => {
    const locks = new LockDirectory(await lockDir());
    const first = await locks.acquire('h');
    const order: number[] = [];
    const waiters = [1, 2, 3, 4].map(async (n) => {
      await new Promise((r) => setTimeout(r, n * 30));
      const held = await locks.acquire('h', { waitSeconds: 10 });
      order.push(n);
      await new Promise((r) => setTimeout(r, 20));
      await held.release();
    });
    await new Promise((r) => setTimeout(r, 200));
    await first.release();
    await Promise.all(waiters);
    expect(order).toEqual([1, 2, 3, 4]);
  });

  it('a waiter with nobody in line takes a free lock without a ticket; one in line is not overtaken by a newcomer', async () => {
    const dir = await lockDir();
    const locks = new LockDirectory(dir);
    await (await locks.acquire('free', { waitSeconds: 10 })).release();
    expect((await fs.readdir(dir)).filter((f) => f.startsWith('free'))).toEqual([]);

    const holder = await locks.acquire('h');
    const order: string[] = [];
    const inLine = locks.acquire('h', { waitSeconds: 10 }).then(async (held) => {
      order.push('in line');
      await new Promise((r) => setTimeout(r, 20));
      await held.release();
    });
    await new Promise((r) => setTimeout(r, 80));
    await holder.release();
    // Right after the release, while the one in line sleeps between its looks at the queue.
    const newcomer = locks.acquire('h', { waitSeconds: 10 }).then(async (held) => {
      order.push('newcomer');
      await held.release();
    });
    await Promise.all([inLine, newcomer]);
    expect(order).toEqual(['in line', 'newcomer']);
  });

  it('a lock whose holder was SIGKILLed is reclaimed at once', async () => {
    const dir = await lockDir();
    // A child process (the built cal code; `npm test` builds first) takes the lock, then is
    // killed without releasing it.
    const script = `
      import { LockDirectory } from ${JSON.stringify(path.join(repoRoot, 'dist', 'state', 'lock.js'))};
      await new LockDirectory(${JSON.stringify(dir)}).acquire('h');
      process.stdout.write('held\\n');
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => d.toString().includes('held') && resolve());
      child.on('exit', (code) => reject(new Error(`child exited ${code}`)));
    });
    const locks = new LockDirectory(dir);
    await expect(locks.acquire('h')).rejects.toMatchObject({ kind: 'busy' });
    child.kill('SIGKILL');
    await new Promise((r) => child.on('exit', r));
    const started = Date.now();
    const held = await locks.acquire('h');
    expect(Date.now() - started).toBeLessThan(200);
    await held.release();
  });

  it('a waiter gives up with busy after its wait', async () => {
    const locks = new LockDirectory(await lockDir());
    const held = await locks.acquire('h');
    await expect(locks.acquire('h', { waitSeconds: 0.2 })).rejects.toMatchObject({ kind: 'busy' });
    await held.release();
  });
});
