import { closeSync, openSync, readSync } from 'node:fs';

/**
 * Random bytes for cal's ids, lock tokens and temporary names, read from the kernel's
 * /dev/urandom: the source node:crypto's randomBytes draws from too (through getrandom), without
 * loading node:crypto, which costs about 5 ms of every cal start here (measured), more than a
 * continue's own state work. Bytes come from a small pool refilled from the kernel; no byte is
 * handed out twice. Where there is no /dev/urandom, node:crypto gives them.
 */
const POOL_SIZE = 256;
let pool: Buffer = Buffer.alloc(0);
let used = 0;

function fromKernel(n: number): Buffer {
  let fd: number | null = null;
  try {
    fd = openSync('/dev/urandom', 'r');
    const out = Buffer.alloc(n);
    for (let filled = 0; filled < n; ) {
      const read = readSync(fd, out, filled, n - filled, null);
      if (read <= 0) throw new Error('/dev/urandom ended');
      filled += read;
    }
    return out;
  } catch {
    return process.getBuiltinModule('node:crypto').randomBytes(n);
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

export function randomBytes(n: number): Buffer {
  if (n > POOL_SIZE) return fromKernel(n);
  if (used + n > pool.length) {
    pool = fromKernel(POOL_SIZE);
    used = 0;
  }
  const out = Buffer.from(pool.subarray(used, used + n));
  used += n;
  return out;
}

/** An RFC 4122 version 4 UUID, as crypto.randomUUID makes. */
export function randomUUID(): string {
  const b = randomBytes(16);
  b[6] = ((b[6] as number) & 0x0f) | 0x40;
  b[8] = ((b[8] as number) & 0x3f) | 0x80;
  const hex = b.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
