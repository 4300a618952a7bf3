import type { Redis } from 'ioredis';
import { keys } from './protocol.js';

/** Whether a host's worker renewed its heartbeat within the last few seconds. */
export async function isAlive(redis: Redis, host: string): Promise<boolean> {
  return (await redis.exists(keys.alive(host))) === 1;
}

/** Whether any worker of the fleet is up (a new session can go to it). */
export async function anyAlive(redis: Redis): Promise<boolean> {
  for (const host of await redis.smembers(keys.hosts)) if (await isAlive(redis, host)) return true;
  return false;
}

/** Waits up to `boundMs` for `up` to hold, asking every 200 ms; whether it did. */
export async function untilUp(up: () => Promise<boolean>, boundMs: number): Promise<boolean> {
  const end = Date.now() + boundMs;
  for (;;) {
    if (await up()) return true;
    if (Date.now() >= end) return false;
    await new Promise((r) => setTimeout(r, Math.min(200, Math.max(0, end - Date.now()))));
  }
}
