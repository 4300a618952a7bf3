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
export async function connectFleet(url: string, blocking: boolean, password?: string): Promise<Redis> {
  if (!/^rediss?:\/\//.test(url)) throw new CalError('usage', `a fleet is a redis:// or rediss:// URL, not ${JSON.stringify(redactedUrl(url))}`);
  const options: RedisOptions = {
    lazyConnect: true,
    connectTimeout: connectTimeoutMs,
    maxRetriesPerRequest: blocking ? null : 1,
    enableOfflineQueue: true,
    // Reconnects after a first connection was made (Redis restarted): every 200 ms, up to 2 s apart.
    retryStrategy: (times) => Math.min(times * 200, 2000),
    // The password given apart from the URL (CAL_FLEET_PASSWORD, --fleet-password-file), so that
    // it is not in any process's argv; one in the URL comes first (ioredis reads the URL first).
    ...(password ? { password } : {}),
  };
  const redis = new Redis(url, options);
  // ioredis rejects a failed connect with "Connection is closed."; the cause (a refused password,
  // an untrusted certificate) comes on 'error' first, and is what the user needs to read.
  let cause: Error | null = null;
  redis.on('error', (err: Error) => {
    cause ??= err;
  });
  try {
    await withTimeout(redis.connect(), connectTimeoutMs + 500);
    await withTimeout(redis.ping(), connectTimeoutMs);
  } catch (err) {
    redis.disconnect();
    throw new CalError('host_unavailable', scrubbed(`the fleet's Redis at ${redactedUrl(url)} ${whyUnreachable(cause ?? err)}`, url, password));
  }
  return redis;
}

/** A message with every secret of the URL (and the password given apart) taken out, whatever quoted it. */
export function scrubbed(message: string, url: string, password?: string): string {
  const secrets = [password];
  try {
    const u = new URL(url);
    const rawQuery = u.search.slice(1).split('&').map((kv) => kv.split('=').slice(1).join('='));
    secrets.push(u.password, u.username, ...u.searchParams.values(), ...rawQuery);
    secrets.push(...secrets.map((s) => (s ? safeDecode(s) : s)));
  } catch {
    // Not a URL: nothing of it was quoted by redactedUrl either.
  }
  let out = message;
  for (const s of secrets) if (s && s.length >= 3) out = out.split(s).join('***');
  return out;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Certificate failures as Node's TLS names them (err.code). */
const untrustedCertificate = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/;

/** One clause saying why a connection failed, with what to do when the user can do something. */
export function whyUnreachable(err: unknown): string {
  const e: Error & { code?: unknown } = err instanceof Error ? err : new Error(String(err));
  const message = e.message.replace(/:[^:@/]*@/, ':***@').trim();
  if (/^(WRONGPASS|NOAUTH)\b/.test(message) || /invalid password/i.test(message)) {
    return `refused the credentials: ${/^NOAUTH/.test(message) ? 'it requires a password and the URL gives none' : 'the user or password in the URL is wrong'} (${message.split(' ')[0]}); give them as redis://:PASSWORD@host:port`;
  }
  const code = typeof e.code === 'string' ? e.code : '';
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return `presented a TLS certificate that does not name the host in the URL (${message})`;
  if (untrustedCertificate.test(code)) {
    return `presented a TLS certificate this machine does not trust (${code}: ${message}); give the certificate of the CA that signed it in NODE_EXTRA_CA_CERTS=<PEM file> (docs/fleet.md)`;
  }
  return `is unreachable: ${message}`;
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
