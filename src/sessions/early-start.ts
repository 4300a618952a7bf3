import { lstatSync } from 'node:fs';
import path from 'node:path';
import { readPrivateJson, startRecordedLaunch } from '../adapters/early-launch.js';
import { isHandleId } from '../handles/id.js';
import { removedMarkFile, resolveStateDir, stateLayout } from '../state/paths.js';
import { isPrivateDir } from '../util/private-dir.js';
import { processRuns } from '../util/process-identity.js';

/** A handle file larger than this is no handle the early start trusts (the turn reads it itself). */
const HANDLE_MAX_BYTES = 1024 * 1024;

/**
 * Starts the CLI of a handle's next resumed turn before cal's modules load (for cal's entry,
 * through commands/early-start.ts), where its adapter recorded the launch in the handle's
 * session folder (adapters/early-launch.ts). The turn takes it only if it would launch the very
 * same; anything else kills it unsent. The state directory, homes/ and handles/ must pass the
 * rule cal holds them to everywhere (util/private-dir.ts), and the handle must be there and be the
 * one the record was written for (recordBelongsToHandle); CAL_EARLY_LAUNCH=0 turns it off. Never
 * throws: the turn then starts its CLI itself.
 */
export function startRecordedContinuation(stateDir: string | undefined, ref: string, env: NodeJS.ProcessEnv): void {
  // Only a handle id: a name would need every handle read.
  if (env.CAL_EARLY_LAUNCH === '0' || !isHandleId(ref)) return;
  try {
    const root = resolveStateDir(stateDir, env);
    const { homes, handles } = stateLayout(root);
    if (!isPrivateDir(root) || !isPrivateDir(homes) || !isPrivateDir(handles)) return;
    const handle = readPrivateJson(path.join(handles, `${ref}.json`), HANDLE_MAX_BYTES);
    if (isPresent(removedMarkFile(handles, ref)) || previousCliRuns(handle)) return;
    startRecordedLaunch(path.join(homes, ref), env, (record) => recordBelongsToHandle(handle, ref, record));
  } catch {
    // Nothing started: the turn starts its CLI itself.
  }
}

/**
 * Whether the handle file (read by hand: zod is not loaded yet) is a structured handle of this
 * id and of the provider whose adapter wrote the record (Claude Code, Codex), in the record's
 * working directory, resuming the record's transcript: a record with no handle, a removed one,
 * or another handle's, runs nothing (issue 40).
 */
export function recordBelongsToHandle(handle: unknown, id: string, record: { provider: string; cwd: string; transcript: string | null }): boolean {
  const h = handle as { id?: unknown; provider?: { provider?: unknown; transport?: unknown; workingDir?: { path?: unknown; realPath?: unknown }; transcript?: { path?: unknown } | null } } | null;
  if (typeof h !== 'object' || h === null || h.id !== id) return false;
  const p = h.provider;
  if (typeof p !== 'object' || p === null || p.provider !== record.provider || p.transport !== 'structured') return false;
  if (record.cwd !== p.workingDir?.path && record.cwd !== p.workingDir?.realPath) return false;
  return record.transcript === (p.transcript?.path ?? null);
}

/**
 * Whether the handle's last turn left its CLI finishing (it ended the turn, then exits): the turn
 * waits for it, and what that CLI writes as it exits (its transcript; Claude's config in a
 * managed home) discards an early one. The likely cause of a second spawn CI saw under load; not
 * reproduced here, so the trace now says why an early CLI went unused (earlyLaunchUnused).
 */
export function previousCliRuns(handle: unknown): boolean {
  const proc = (handle as { provider?: { cliProcess?: { pid?: unknown; startTime?: unknown } | null } } | null)?.provider?.cliProcess;
  if (typeof proc !== 'object' || proc === null || typeof proc.pid !== 'number' || !Number.isInteger(proc.pid) || proc.pid <= 0) return false;
  return processRuns(proc.pid, typeof proc.startTime === 'string' ? proc.startTime : null);
}

function isPresent(file: string): boolean {
  return lstatSync(file, { throwIfNoEntry: false }) !== undefined;
}
