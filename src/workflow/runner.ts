import path from 'node:path';
import { CalError, toCalError } from '../errors.js';
import { isProcessAlive, processStartTime, type HeldLock } from '../state/lock.js';
import { newId, type EventRecord, type StateStore } from '../state/store.js';
import type { AgentSessions } from '../sessions/agent-sessions.js';
import type { TurnRecord } from '../state/turns.js';
import { isMessagePhase, type Phase, type Plan } from './plan.js';
import { listRuns, saveRun, type PhaseRecord, type RunRecord } from './runs.js';
import { runExeca } from '../util/spawn.js';

/**
 * Runs a plan's phases in order on one logical session. Every step is recorded before it
 * happens, so `cal recover` can pick a run up where it stopped: a phase starts only after the
 * one before it completed, `waiting_for_lock` is recorded before a named lock is taken, and a
 * command phase that may already have run is not run again unless it says it is idempotent.
 */
export interface RunOptions {
  env: Record<string, string>;
  onEvent?: (event: EventRecord) => void;
  onPhase?: (phase: PhaseRecord, answer: string | null) => void;
}

export function newRun(planFile: string, plan: Plan): RunRecord {
  const now = new Date().toISOString();
  return {
    schemaVersion: 1,
    id: `r${newId(9)}`,
    planFile: path.resolve(planFile),
    plan,
    handle: 'handle' in plan.session ? plan.session.handle : null,
    status: 'running',
    phases: plan.phases.map((p) => ({ id: p.id, status: 'pending', turnId: null, exitCode: null, error: null, startedAt: null, endedAt: null })),
    ownerPid: process.pid,
    ownerStartTime: processStartTime(process.pid),
    createdAt: now,
    updatedAt: now,
  };
}

export function namedLock(name: string): string {
  return `named-${name}`;
}

export async function executeRun(store: StateStore, sessions: AgentSessions, initial: RunRecord, opts: RunOptions): Promise<RunRecord> {
  let run: RunRecord = { ...initial, ownerPid: process.pid, ownerStartTime: processStartTime(process.pid) };
  let runLock: HeldLock;
  try {
    runLock = await store.locks.acquire(`run-${run.id}`);
  } catch {
    throw new CalError('busy', `run ${run.id} is being executed by another cal process`);
  }
  const save = async () => saveRun(store, run);
  const setPhase = async (index: number, patch: Partial<PhaseRecord>) => {
    run = { ...run, phases: run.phases.map((p, i) => (i === index ? { ...p, ...patch } : p)) };
    await save();
  };
  const event = async (name: string, detail: Record<string, unknown>) => {
    // Only on a handle that exists: an event log is never created for a name that matched nothing.
    const handle = run.handle ? await store.loadHandle(run.handle).catch(() => null) : null;
    if (handle) await sessions.workflowEvent(handle.id, name, { run: run.id, ...detail }, opts.onEvent);
  };
  try {
    await save();
    for (let i = 0; i < run.plan.phases.length; i++) {
      const phase = run.plan.phases[i] as Phase;
      const rec = run.phases[i] as PhaseRecord;
      if (rec.status === 'completed') continue;
      if (rec.status === 'failed') break;
      const resumedMidPhase = rec.status === 'running';
      let lock: HeldLock | null = null;
      try {
        if (phase.lock) {
          await setPhase(i, { status: 'waiting_for_lock' });
          await event('waiting_for_lock', { phase: phase.id, lock: phase.lock });
          lock = await store.locks.acquire(namedLock(phase.lock), { waitSeconds: Infinity });
        }
        await setPhase(i, { status: 'running', startedAt: rec.startedAt ?? new Date().toISOString() });
        // Whatever a phase throws (a handle that does not exist, a state error) fails the phase
        // and so the run: a run is never left `running` with no cal behind it.
        const result = await (isMessagePhase(phase)
          ? runMessagePhase(sessions, run, phase, opts, async (handle) => {
              run = { ...run, handle };
              await save();
            })
          : runCommandPhase(store, run, phase, resumedMidPhase, opts.env)
        ).catch((err): PhaseResult => {
          const e = toCalError(err);
          return { patch: { status: 'failed', turnId: e.details.turn ?? null, error: `${e.kind}: ${e.message}` }, answer: null };
        });
        await setPhase(i, { ...result.patch, endedAt: new Date().toISOString() });
        opts.onPhase?.(run.phases[i] as PhaseRecord, result.answer);
        await event(result.patch.status === 'completed' ? 'phase_completed' : 'phase_failed', { phase: phase.id });
        if (result.patch.status !== 'completed') break;
      } finally {
        await lock?.release();
      }
    }
    run = { ...run, status: run.phases.every((p) => p.status === 'completed') ? 'completed' : 'failed' };
    await save();
    return run;
  } finally {
    await runLock.release();
  }
}

interface PhaseResult {
  patch: Partial<PhaseRecord> & { status: 'completed' | 'failed' };
  answer: string | null;
}

async function runMessagePhase(
  sessions: AgentSessions,
  run: RunRecord,
  phase: Extract<Phase, { message: string }>,
  opts: RunOptions,
  onHandle: (handle: string) => Promise<void>,
): Promise<PhaseResult> {
  const correlationId = `run:${run.id}:${phase.id}`;
  // A turn this phase already created (before a crash) is never sent again: its outcome counts.
  const existing: TurnRecord | null = run.handle ? await sessions.findTurn(run.handle, correlationId) : null;
  if (existing) {
    if (existing.status === 'completed') return { patch: { status: 'completed', turnId: existing.id }, answer: existing.answer };
    if (['failed', 'interrupted', 'lost'].includes(existing.status)) {
      return { patch: { status: 'failed', turnId: existing.id, error: existing.error?.message ?? existing.status }, answer: null };
    }
    return { patch: { status: 'failed', turnId: existing.id, error: `turn ${existing.id} is still ${existing.status}; run cal recover` }, answer: null };
  }
  try {
    const timeoutSeconds = phase.timeout;
    const result =
      run.handle === null && 'provider' in run.plan.session
        ? await sessions.start({
            ...run.plan.session,
            message: phase.message,
            env: opts.env,
            timeoutSeconds,
            correlationId,
            onEvent: opts.onEvent,
            onHandle: (h) => onHandle(h.id),
          })
        : await sessions.continue({ ref: run.handle as string, message: phase.message, env: opts.env, waitSeconds: Infinity, timeoutSeconds, correlationId, onEvent: opts.onEvent });
    const turn = result.turn;
    if (turn.status === 'completed') return { patch: { status: 'completed', turnId: turn.id }, answer: turn.answer };
    return { patch: { status: 'failed', turnId: turn.id, error: turn.error?.message ?? turn.status }, answer: null };
  } catch (err) {
    const e = toCalError(err);
    return { patch: { status: 'failed', turnId: e.details.turn ?? null, error: `${e.kind}: ${e.message}` }, answer: null };
  }
}

async function runCommandPhase(store: StateStore, run: RunRecord, phase: Extract<Phase, { command: unknown }>, resumedMidPhase: boolean, env: Record<string, string>): Promise<PhaseResult> {
  if (resumedMidPhase && !phase.idempotent) {
    return {
      patch: { status: 'failed', error: 'cal stopped while this command ran; it may have run already, so it is not run again (mark it idempotent to allow that)' },
      answer: null,
    };
  }
  // The session's working directory (docs/plans.md): the handle's once there is one, else the
  // plan's session.cwd, else the plan's folder (a command phase before any message phase).
  const handle = run.handle ? await store.loadHandle(run.handle) : null;
  const cwd = handle ? handle.config.workingDir.realPath : 'provider' in run.plan.session && run.plan.session.cwd ? run.plan.session.cwd : path.dirname(run.planFile);
  const childEnv = { ...env, CAL_RUN_ID: run.id, CAL_PHASE: phase.id, CAL_HANDLE: run.handle ?? '' };
  const options = { cwd, env: childEnv, reject: false, timeout: phase.timeout ? phase.timeout * 1000 : undefined };
  const res = Array.isArray(phase.command)
    ? await runExeca(phase.command[0] as string, phase.command.slice(1), options)
    : await runExeca(phase.command, [], { ...options, shell: true });
  if (res.exitCode === 0) return { patch: { status: 'completed', exitCode: 0 }, answer: null };
  return { patch: { status: 'failed', exitCode: res.exitCode ?? null, error: `command exited with ${res.exitCode ?? res.signal}` }, answer: null };
}

/** Runs whose cal died: resumed where they stopped (after turns were settled). */
export async function recoverRuns(store: StateStore, sessions: AgentSessions, opts: RunOptions & { dryRun?: boolean }): Promise<{ run: string; status: string; skipped?: string }[]> {
  const out: { run: string; status: string; skipped?: string }[] = [];
  for (const run of await listRuns(store)) {
    if (run.status !== 'running') continue;
    if (run.ownerPid !== null && isProcessAlive(run.ownerPid, run.ownerStartTime)) continue;
    if (opts.dryRun) {
      out.push({ run: run.id, status: 'would_resume' });
      continue;
    }
    try {
      const done = await executeRun(store, sessions, run, opts);
      out.push({ run: run.id, status: done.status });
    } catch (err) {
      const e = toCalError(err);
      out.push({ run: run.id, status: run.status, skipped: e.message });
    }
  }
  return out;
}
