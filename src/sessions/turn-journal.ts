import { processStartTime } from '../state/lock.js';
import { newId, type StateStore } from '../state/store.js';
import type { TurnRecord, TurnStatus } from '../state/turns.js';

/** A turn record and the one way it changes: every status change is written at once. */
export interface TurnJournal {
  turn: TurnRecord;
  set(status: TurnStatus, patch?: Partial<TurnRecord>): Promise<void>;
}

/** Writes the turn record before anything is sent (design §5). */
export async function newTurn(store: StateStore, handleId: string, message: string, correlationId: string | null = null): Promise<TurnJournal> {
  // The sequence number is taken under a short lock of its own: two callers racing for the
  // handle (one of them to be told busy) must not both become turn N.
  const seqLock = await store.locks.acquire(`turn-seq-${handleId}`, { waitSeconds: 30 });
  try {
    return await writeNewTurn(store, handleId, message, correlationId);
  } finally {
    await seqLock.release();
  }
}

async function writeNewTurn(store: StateStore, handleId: string, message: string, correlationId: string | null): Promise<TurnJournal> {
  // Past every record on disk, readable or not (a torn record still holds its number).
  const seq = await store.nextTurnSeq(handleId);
  const now = new Date().toISOString();
  const turn: TurnRecord = {
    schemaVersion: 1,
    id: `t${String(seq).padStart(4, '0')}-${newId(6)}`,
    handleId,
    seq,
    message,
    status: 'queued',
    turnKey: null,
    answer: null,
    error: null,
    tools: [],
    ownerPid: process.pid,
    ownerStartTime: processStartTime(process.pid),
    correlationId,
    sentAt: null,
    createdAt: now,
    updatedAt: now,
  };
  await store.saveTurn(turn);
  return journalFor(store, turn);
}

export function journalFor(store: StateStore, initial: TurnRecord): TurnJournal {
  const journal: TurnJournal = {
    turn: initial,
    async set(status: TurnStatus, patch: Partial<TurnRecord> = {}) {
      journal.turn = { ...journal.turn, ...patch, status };
      await store.saveTurn(journal.turn);
    },
  };
  return journal;
}

/** A journal taken over by this process (recover, or a continue settling an earlier turn). */
export async function adoptTurn(store: StateStore, turn: TurnRecord): Promise<TurnJournal> {
  const journal = journalFor(store, { ...turn, ownerPid: process.pid, ownerStartTime: processStartTime(process.pid) });
  await journal.set(turn.status);
  return journal;
}
