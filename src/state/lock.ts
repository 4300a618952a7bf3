import { randomBytes } from '../util/random.js';
import { closeSync, constants as fsConstants, lstatSync, openSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { z } from '../util/zod.js';
import { CalError } from '../errors.js';
import { judgeFromHere, ownPidScope } from '../util/pid-namespace.js';
import { isProcessAlive, processStartTime } from '../util/process-identity.js';
import { ensurePrivateDir, readJsonFile, stateWriteError } from './fs.js';

/**
 * Cross-process lock owned by a live process. proper-lockfile only reclaims a lock after a
 * staleness timeout; cal must reclaim a dead holder's lock at once, so the holder is identified
 * by pid plus the kernel's start time of that pid (a reused pid is not the holder).
 *
 * Waiters take tickets in a queue folder and are served in arrival order. The lock file and the
 * tickets are written and read synchronously: every continuation takes two locks, and each
 * small system call costs less than a thread-pool round trip.
 */
const LockOwner = z.object({
  pid: z.number(),
  startTime: z.string().nullable(),
  token: z.string(),
  acquiredAt: z.string(),
  // Where the pid means something (util/pid-namespace.ts); absent in an older cal's lock.
  pidNs: z.string().nullable().optional(),
  bootId: z.string().nullable().optional(),
  // Held only for a moment (a reaper ending an idle pane): one who would not wait waits for it.
  brief: z.boolean().optional(),
});
type LockOwner = z.infer<typeof LockOwner>;

/**
 * Whether a lock's holder (or a ticket's writer) may still run. One in another PID namespace of
 * this kernel (a container sharing the state directory with its host) is never judged dead by a
 * pid that means nothing here: it holds the lock (busy) until it releases it.
 */
function ownerMayRun(owner: LockOwner): boolean {
  switch (judgeFromHere(owner)) {
    case 'other_namespace':
      return true;
    case 'other_boot':
      return false;
    default:
      return isProcessAlive(owner.pid, owner.startTime);
  }
}

// Moved to util so the engine (which never imports state) can tell a structured CLI's liveness too.
export { isProcessAlive, processStartTime };

export interface HeldLock {
  name: string;
  release(): Promise<void>;
}

export interface AcquireOptions {
  /** undefined: fail with busy at once; a number: wait up to that many seconds; Infinity: wait forever. */
  waitSeconds?: number;
  /** Called once when the caller starts to wait (for the waiting_for_lock event). */
  onWait?: () => void | Promise<void>;
  /** Stops waiting in line (an `interrupted` error); the ticket is removed. */
  signal?: AbortSignal;
  /**
   * Taken only for a moment by housekeeping (`cal reap`): a caller who would not wait (a plain
   * continue) waits for such a holder instead of failing with busy, since no turn is in flight.
   */
  brief?: boolean;
}

/** How long a caller who would not wait still waits for a brief holder (a reaper) to let go. */
const BRIEF_HOLD_WAIT_S = 30;

/**
 * Whether anyone (alive or not) may have a ticket in the queue folder. No folder is no one. Anything
 * but a plain folder there (a planted symlink, a file), or a folder that cannot be read, is left to
 * the ticketed path, which refuses it or says what is wrong with it.
 */
function hasTickets(queue: string): boolean {
  try {
    if (!lstatSync(queue).isDirectory()) return true;
    return readdirSync(queue).length > 0;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

export class LockDirectory {
  constructor(private readonly dir: string) {}

  private lockFile(name: string): string {
    return path.join(this.dir, `${name}.lock`);
  }

  private queueDir(name: string): string {
    return path.join(this.dir, `${name}.queue`);
  }

  /** The current holder, if it is alive. */
  async holder(name: string): Promise<LockOwner | null> {
    const read = await readJsonFile(this.lockFile(name), LockOwner);
    if (!read.ok) return null;
    return ownerMayRun(read.value) ? read.value : null;
  }

  async acquire(name: string, opts: AcquireOptions = {}): Promise<HeldLock> {
    const me: LockOwner = {
      pid: process.pid,
      startTime: processStartTime(process.pid),
      token: randomBytes(8).toString('hex'),
      acquiredAt: new Date().toISOString(),
      ...ownPidScope(),
      ...(opts.brief ? { brief: true } : {}),
    };
    if (opts.waitSeconds === undefined) {
      if (await this.tryTake(name, me)) return this.held(name, me);
      const holder = await this.holder(name);
      if (holder?.brief) return this.acquireInOrder(name, me, { ...opts, waitSeconds: BRIEF_HOLD_WAIT_S });
      // Let go between the two looks (a reaper's moment, just over): taken now.
      if (!holder && (await this.tryTake(name, me))) return this.held(name, me);
      throw new CalError('busy', `${name} is busy: another cal process is continuing it; retry later or pass --wait`);
    }
    return this.acquireInOrder(name, me, opts);
  }

  private async acquireInOrder(name: string, me: LockOwner, opts: AcquireOptions): Promise<HeldLock> {
    const queue = this.queueDir(name);
    // Nobody in line: taken at once, as by a caller who would not wait, without a ticket (the
    // common case of every turn, a few system calls fewer). A caller arriving meanwhile queues
    // behind whoever holds the lock, as it would behind a ticket.
    if (!hasTickets(queue) && (await this.tryTake(name, me))) return this.held(name, me);
    await ensurePrivateDir(queue);
    // hrtime-based ticket names sort in arrival order within one machine.
    const ticket = `${process.hrtime.bigint().toString().padStart(24, '0')}-${me.pid}-${me.token}`;
    const ticketPath = path.join(queue, ticket);
    try {
      writeFileSync(ticketPath, JSON.stringify(me), { mode: 0o600, flag: 'wx' });
    } catch (err) {
      rmSync(ticketPath, { force: true });
      throw stateWriteError(err, ticketPath);
    }
    const deadline = opts.waitSeconds === Infinity ? Infinity : Date.now() + (opts.waitSeconds ?? 0) * 1000;
    let announced = false;
    try {
      for (;;) {
        if ((await this.firstLiveTicket(queue)) === ticket && (await this.tryTake(name, me))) {
          return this.held(name, me);
        }
        if (!announced) {
          announced = true;
          await opts.onWait?.();
        }
        if (opts.signal?.aborted) throw new CalError('interrupted', `cancelled while waiting for ${name}`);
        if (Date.now() >= deadline) {
          throw new CalError('busy', `${name} is still busy after waiting ${opts.waitSeconds}s; retry later`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      rmSync(ticketPath, { force: true });
    }
  }

  private async firstLiveTicket(queue: string): Promise<string | null> {
    const entries = readdirSync(queue).sort();
    for (const entry of entries) {
      const [, pid] = entry.split('-');
      // Read without blocking (a FIFO planted as a ticket must not hang the queue). A ticket being
      // written right now is judged by the pid and start time of its writer's name.
      const read = await readJsonFile(path.join(queue, entry), LockOwner).catch(() => null);
      const startTime = read?.ok ? read.value.startTime : read?.ok === false && read.reason === 'corrupt' && /^\d+-\d+-[0-9a-f]+$/.test(entry) ? processStartTime(Number(pid)) : null;
      if (read?.ok ? ownerMayRun(read.value) : isProcessAlive(Number(pid), startTime)) return entry;
      rmSync(path.join(queue, entry), { force: true });
    }
    return null;
  }

  private async tryTake(name: string, me: LockOwner): Promise<boolean> {
    const file = this.lockFile(name);
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const fd = openSync(file, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o600);
        try {
          // No fsync: a lock outlives no crash (its holder dies with the machine), and a lock
          // file left empty by one is unreadable, so it is reclaimed like any dead holder's.
          writeFileSync(fd, JSON.stringify(me));
        } catch (err) {
          // A full disk: the empty lock file is not left behind, and the error is the state dir's.
          closeSync(fd);
          rmSync(file, { force: true });
          throw stateWriteError(err, file);
        }
        closeSync(fd);
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw stateWriteError(err, file);
      }
      const current = await readJsonFile(file, LockOwner);
      if (current.ok && ownerMayRun(current.value)) return false;
      if (!current.ok && current.reason === 'corrupt') {
        // A holder may be mid-write; only a lock file that stays unreadable is reclaimed.
        await new Promise((r) => setTimeout(r, 20));
        const again = await readJsonFile(file, LockOwner);
        if (again.ok) continue;
      }
      await this.reclaim(file, current.ok ? current.value.token : null);
    }
    return false;
  }

  /** Moves a dead holder's lock aside atomically; if a live lock was moved by a race, it is put back. */
  private async reclaim(file: string, staleToken: string | null): Promise<void> {
    const aside = `${file}.stale-${randomBytes(6).toString('hex')}`;
    try {
      await fs.rename(file, aside);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    const moved = await readJsonFile(aside, LockOwner);
    if (moved.ok && moved.value.token !== staleToken && ownerMayRun(moved.value)) {
      await fs.link(aside, file).catch(() => undefined);
    }
    await fs.rm(aside, { force: true });
  }

  private held(name: string, me: LockOwner): HeldLock {
    const file = this.lockFile(name);
    return {
      name,
      release: async () => {
        const current = await readJsonFile(file, LockOwner);
        if (current.ok && current.value.token === me.token) rmSync(file, { force: true });
      },
    };
  }
}
