import { Redis, type RedisOptions } from 'ioredis';
import { CalError } from '../errors.js';
import { redactedUrl } from './protocol.js';

/** How long a first connection to Redis may take before the fleet counts as unreachable. */
export const connectTimeoutMs = 2000;

/**
 * A connection to the fleet's Redis, checked before use: an unreachable Redis (or a wrong
 * password) is `host_unavailable` at once, never a call that hangs in ioredis's offline queue.
 * `redis://` and `rediss://` (TLS) URLs, with a password, as ioredis reads them.
 *
 * `blocking`: BullMQ's workers and event readers need connections that never give up a command
 * (maxRetriesPerRequest null); a client's own commands fail fast instead.
 */
export async function connectFleet(url: string, blocking: boolean): Promise<Redis> {
  if (!/^rediss?:\/\//.test(url)) throw new CalError('usage', `a fleet is a redis:// or rediss:// URL, not ${JSON.stringify(redactedUrl(url))}`);
  const options: RedisOptions = {
    lazyConnect: true,
    connectTimeout: connectTimeoutMs,
    maxRetriesPerRequest: blocking ? null : 1,
    enableOfflineQueue: true,
    // Reconnects after a first connection was made (Redis restarted): every 200 ms, up to 2 s apart.
    retryStrategy: (times) => Math.min(times * 200, 2000),
  };
  const redis = new Redis(url, options);
  // ioredis reports connection errors on 'error' too; the connect below is where they count.
  redis.on('error', () => undefined);
  try {
    await withTimeout(redis.connect(), connectTimeoutMs + 500);
    await withTimeout(redis.ping(), connectTimeoutMs);
  } catch (err) {
    redis.disconnect();
    const why = err instanceof Error ? err.message : String(err);
    throw new CalError('host_unavailable', `the fleet's Redis at ${redactedUrl(url)} is unreachable: ${why.replace(/:[^:@/]*@/, ':***@')}`);
  }
  return redis;
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
