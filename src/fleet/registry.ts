import type { Redis } from 'ioredis';
import type { Handle, HandleSummary } from '../library/types.js';
import { z } from '../util/zod.js';
import { isAlive } from './hosts.js';
import { claimTtlSeconds, JobResult, keys } from './protocol.js';

/**
 * What the fleet records in Redis beside the queues (docs/fleet.md): which host owns each handle
 * and each name, each start's claim, and each host's last listing. Every write that decides
 * something between hosts (a name, a claim) is one Lua script, so two workers cannot both win.
 */

/** A name is the host's if it is free or already the host's; else the host that holds it. */
const claimNameScript = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if (not cur) or cur == ARGV[2] then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) return false end
return cur`;

/** Drops a name only if this host holds it (a removal on one host never frees another's name). */
const releaseNameScript = `
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then redis.call('HDEL', KEYS[1], ARGV[1]) return 1 end
return 0`;

/** Sets a start's claim unless there is one; the one there, or nil when this call set it. */
const claimStartScript = `
local cur = redis.call('GET', KEYS[1])
if cur then return cur end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return false`;

/** Null when the name is now (or already was) `host`'s; else the host that holds it. */
export async function claimName(redis: Redis, name: string, host: string): Promise<string | null> {
  const holder = (await redis.eval(claimNameScript, 1, keys.names, name, host)) as string | null;
  return holder ?? null;
}

export async function releaseName(redis: Redis, name: string, host: string): Promise<void> {
  await redis.eval(releaseNameScript, 1, keys.names, name, host);
}

/** A handle (and its name, unless another host holds it) is `host`'s: its operations go there. */
export async function own(redis: Redis, host: string, handle: string, name: string | null | undefined): Promise<void> {
  await redis.hset(keys.handles, handle, host);
  if (name) await claimName(redis, name, host);
}

/** A removed handle leaves the fleet's records (its name only if this host held it). */
export async function forget(redis: Redis, host: string, handle: Handle): Promise<void> {
  await redis.hdel(keys.handles, handle.id);
  if (handle.name) await releaseName(redis, handle.name, host);
}

/** What a start's claim holds: the host that took it, the turn once sent, the result once it ended. */
export const StartClaim = z.object({
  host: z.string(),
  handle: z.string().optional(),
  turn: z.string().optional(),
  result: JobResult.optional(),
});
export type StartClaim = z.infer<typeof StartClaim>;

/**
 * Claims a start job for `host` before anything is sent: null when this host now holds it (or
 * held it already: a run of the same job on the same host, which finds its turn by its tag);
 * else the claim another host made.
 */
export async function claimStart(redis: Redis, jobId: string, host: string): Promise<StartClaim | null> {
  const cur = (await redis.eval(claimStartScript, 1, keys.claim(jobId), JSON.stringify({ host }), String(claimTtlSeconds))) as string | null;
  if (cur === null) return null;
  const claim = readClaim(cur);
  return claim.host === host ? null : claim;
}

/** Adds to this host's claim (the turn once sent, the result once ended). */
export async function updateClaim(redis: Redis, jobId: string, host: string, patch: Omit<StartClaim, 'host'>): Promise<void> {
  const cur = await redis.get(keys.claim(jobId));
  const claim = cur === null ? { host } : readClaim(cur);
  if (claim.host !== host) return;
  await redis.set(keys.claim(jobId), JSON.stringify({ ...claim, ...patch }), 'EX', claimTtlSeconds);
}

function readClaim(text: string): StartClaim {
  try {
    return StartClaim.parse(JSON.parse(text));
  } catch {
    // Unreadable: someone holds the claim; nothing is sent on its account.
    return { host: '(unknown)' };
  }
}

/**
 * A start another host claimed: its result once that host ends it; while it is up, waited for
 * (up to `boundMs`); a host gone before the result is `unconfirmed` (exit 19): the message may
 * have reached its CLI, it is not sent again, and the turn settles on that host when it is back.
 */
export async function claimedElsewhere(redis: Redis, jobId: string, first: StartClaim, boundMs: number): Promise<JobResult> {
  const end = Date.now() + boundMs;
  let claim = first;
  for (;;) {
    if (claim.result) return claim.result;
    if (!(await isAlive(redis, claim.host)) || Date.now() >= end) break;
    await new Promise((r) => setTimeout(r, 500));
    const cur = await redis.get(keys.claim(jobId));
    if (cur !== null) claim = readClaim(cur);
  }
  const where = claim.handle ? `handle ${claim.handle} on host ${claim.host}` : `host ${claim.host}`;
  const message = `this start was taken by host ${claim.host}, which went down before it ended; it is not sent again: the turn, if its message left, settles on ${where} when that host is back (cal inspect, cal recover)`;
  return {
    ok: false,
    host: claim.host,
    error: { kind: 'unconfirmed', message, ...(claim.handle ? { handle: claim.handle } : {}), ...(claim.turn ? { turn: claim.turn } : {}) },
  };
}

/** A host's last listing, kept for `inspect` while the host is down. */
export async function saveListing(redis: Redis, host: string, handles: HandleSummary[]): Promise<void> {
  await redis.set(keys.listing(host), JSON.stringify(handles));
}

const Listed = z.array(z.object({ handle: z.object({ id: z.string() }).passthrough() }).passthrough());

/** The listing a host left (its handles as it last answered), or null. */
export async function lastListing(redis: Redis, host: string): Promise<HandleSummary[] | null> {
  const text = await redis.get(keys.listing(host));
  if (text === null) return null;
  try {
    return Listed.parse(JSON.parse(text)) as unknown as HandleSummary[];
  } catch {
    return null;
  }
}

/** The handle ids Redis says `host` owns (for a host down that left no listing). */
export async function ownedBy(redis: Redis, host: string): Promise<string[]> {
  const all = await redis.hgetall(keys.handles);
  return Object.entries(all)
    .filter(([, h]) => h === host)
    .map(([id]) => id)
    .sort();
}
