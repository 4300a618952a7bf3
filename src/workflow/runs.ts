import { promises as fs } from 'node:fs';
import path from 'node:path';
import { z } from '../util/zod.js';
import { ensurePrivateDir, readJsonFile, writeJsonAtomic } from '../state/fs.js';
import type { StateStore } from '../state/store.js';
import { Plan } from './plan.js';

/** The durable record of one `cal run`: the plan as it was, and where each phase stands. */
export const PhaseStatus = z.enum(['pending', 'waiting_for_lock', 'running', 'completed', 'failed']);
export type PhaseStatus = z.infer<typeof PhaseStatus>;

export const PhaseRecord = z.object({
  id: z.string(),
  status: PhaseStatus,
  turnId: z.string().nullable().default(null),
  exitCode: z.number().nullable().default(null),
  error: z.string().nullable().default(null),
  startedAt: z.string().nullable().default(null),
  endedAt: z.string().nullable().default(null),
});
export type PhaseRecord = z.infer<typeof PhaseRecord>;

export const RunRecord = z.object({
  schemaVersion: z.literal(1),
  id: z.string(),
  planFile: z.string(),
  plan: Plan,
  handle: z.string().nullable(),
  status: z.enum(['running', 'completed', 'failed']),
  phases: z.array(PhaseRecord),
  ownerPid: z.number().nullable(),
  ownerStartTime: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type RunRecord = z.infer<typeof RunRecord>;

export function runsDir(store: StateStore): string {
  return path.join(store.layout.root, 'runs');
}

export async function saveRun(store: StateStore, run: RunRecord): Promise<void> {
  await ensurePrivateDir(runsDir(store));
  await writeJsonAtomic(path.join(runsDir(store), `${run.id}.json`), RunRecord.parse({ ...run, updatedAt: new Date().toISOString() }));
}

export async function listRuns(store: StateStore): Promise<RunRecord[]> {
  let entries: string[];
  try {
    entries = await fs.readdir(runsDir(store));
  } catch {
    return [];
  }
  const out: RunRecord[] = [];
  for (const entry of entries.filter((e) => e.endsWith('.json'))) {
    const read = await readJsonFile(path.join(runsDir(store), entry), RunRecord);
    if (read.ok) out.push(read.value);
  }
  return out.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}
