import { describe, expect, it } from 'vitest';
import { TurnError } from '../../src/library/errors.js';
import type { SessionDetail } from '../../src/library/types.js';
import { waitForTurns } from '../../src/library/wait.js';
import { processStartTime } from '../../src/util/process-identity.js';

/**
 * `cal wait --any` and the library's waitForAny (library/wait.ts): the first of several handles'
 * newest turns to settle wins, by their records alone.
 */
function detail(handle: string, turns: Array<{ id: string; status: string; answer?: string; ownerPid?: number | null }>): SessionDetail {
  return {
    handle: { id: handle },
    turns: turns.map((t) => ({ id: t.id, status: t.status, answer: t.answer ?? null, ownerPid: t.ownerPid === undefined ? process.pid : t.ownerPid, ownerStartTime: processStartTime(process.pid), error: t.status === 'failed' ? { kind: 'turn_failed', message: 'boom' } : null })),
  } as unknown as SessionDetail;
}

/** An inspect whose records change with the number of times it was called. */
function records(byCall: (call: number) => Record<string, SessionDetail>) {
  let calls = 0;
  return async (ref: unknown) => {
    const now = byCall(Math.floor(calls++ / 2));
    const found = now[String(ref)];
    if (!found) throw new Error(`no ${String(ref)}`);
    return found;
  };
}

describe('waiting for the first of several turns', () => {
  it('returns the turn that settles first, with its handle, and not an older turn of another handle', async () => {
    const inspect = records((round) => ({
      a: detail('a', [{ id: 't1', status: 'completed' }, { id: 't2', status: 'running' }]),
      b: detail('b', [{ id: 't3', status: round >= 2 ? 'completed' : 'running', answer: 'B done' }]),
    }));
    const result = await waitForTurns(inspect, ['a', 'b']);
    expect(result.handle.id).toBe('b');
    expect(result.turn).toMatchObject({ id: 't3', answer: 'B done' });
  });

  it('a turn that settled otherwise is thrown as its TurnError, with the records', async () => {
    const inspect = records(() => ({ a: detail('a', [{ id: 't1', status: 'running' }]), b: detail('b', [{ id: 't2', status: 'failed' }]) }));
    const err = await waitForTurns(inspect, ['a', 'b']).catch((e) => e);
    expect(err).toBeInstanceOf(TurnError);
    expect(err.kind).toBe('turn_failed');
    expect(err.result.handle.id).toBe('b');
  });

  it('gives up after timeoutSeconds with timeout, naming every turn still running', async () => {
    const inspect = records(() => ({ a: detail('a', [{ id: 't1', status: 'running' }]), b: detail('b', [{ id: 't2', status: 'sending' }]) }));
    await expect(waitForTurns(inspect, ['a', 'b'], { timeoutSeconds: 0.3 })).rejects.toMatchObject({ kind: 'timeout', message: 'turn t1 of a is still running; turn t2 of b is still sending after 0.3s; they go on (cal wait again, or cal inspect)' });
  });

  it('a turn whose owning cal is gone is lost (recover settles it); a handle with no turn is not_found; no handle is usage', async () => {
    const gone = records(() => ({ a: detail('a', [{ id: 't1', status: 'running' }]), b: detail('b', [{ id: 't2', status: 'running', ownerPid: 2 ** 22 + 7 }]) }));
    await expect(waitForTurns(gone, ['a', 'b'])).rejects.toMatchObject({ kind: 'lost', details: { handle: 'b', turn: 't2' } });
    const empty = records(() => ({ a: detail('a', []) }));
    await expect(waitForTurns(empty, ['a'])).rejects.toMatchObject({ kind: 'not_found', message: 'handle a has no turn yet' });
    await expect(waitForTurns(empty, [])).rejects.toMatchObject({ kind: 'usage' });
    await expect(waitForTurns(empty, ['a', 'b'], { turn: 't1' })).rejects.toMatchObject({ kind: 'usage' });
  });
});
