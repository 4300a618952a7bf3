import path from 'node:path';
import type { StartedStructuredTurn } from '../adapters/types.js';
import { runProviderTurn } from '../engine/decision.js';
import { tmuxSocketFor } from '../engine/tmux-socket.js';
import type { EngineHooks, ProviderEvent, TurnIntent, TurnOutcome } from '../engine/types.js';
import { CalError, toCalError } from '../errors.js';
import type { AgentSessionHandle, PaneRecord } from '../handles/schema.js';
import { processStartTime } from '../state/lock.js';
import { terminalStatuses, type TurnStatus } from '../state/turns.js';
import { timingMark } from '../util/timing.js';
import { apiTurn } from './api-turn.js';
import { errorKindFor, sessionConfig, type SessionContext } from './context.js';
import type { TurnJournal } from './turn-journal.js';
import type { ExecOptions, TurnResult } from './types.js';

export const DEFAULT_TIMEOUT_S = 600;

/**
 * Fault injection for the durability tests: with CAL_FAULT=<point> in the environment, cal
 * stops at that point (after the turn record is written) until it is killed.
 */
async function faultPoint(point: string, env: Record<string, string>): Promise<void> {
  if (env.CAL_FAULT !== point) return;
  process.stderr.write(`cal: paused at fault point ${point}\n`);
  await new Promise(() => undefined);
}

/**
 * Runs one turn, with the handle's lock already held: the engine decides how the message
 * reaches the session (or, with intent `await`, follows a turn the CLI already has), and the
 * turn record moves through its statuses on the way. An API session is continued from cal's
 * own history instead.
 */
export async function executeTurn(
  ctx: SessionContext,
  handleId: string,
  journal: TurnJournal,
  req: ExecOptions,
  intent: TurnIntent,
  started: StartedStructuredTurn | null = null,
): Promise<TurnResult> {
  // Reload under the lock: the previous holder may have changed panes or offsets.
  let handle = await ctx.store.loadHandle(handleId);
  timingMark('handle-loaded');
  if (req.trustWorkingDir === false && handle.config.trustWorkingDir) {
    // `--no-trust` (or the state dir's config) holds for this session from now on.
    handle = { ...handle, config: { ...handle.config, trustWorkingDir: false } };
    await ctx.store.saveHandle(handle);
  }
  const message = journal.turn.message;
  const hooks: EngineHooks = {
    emit: (event: ProviderEvent, detail?: Record<string, unknown>) => ctx.event(handle.id, event, journal.turn.id, detail, req.onEvent),
    onSending: async () => {
      await journal.set('sending', { ownerPid: process.pid, ownerStartTime: processStartTime(process.pid) });
      await faultPoint('before-send', req.env);
      timingMark('sending-recorded');
      // A structured or API turn hands the message over as it starts: no later moment says more.
      if (handle.provider.transport !== 'tmux') req.onSent?.({ handle: handle.id, turn: journal.turn.id });
    },
    onSent: async () => {
      await journal.set(journal.turn.status, { sentAt: new Date().toISOString() });
      req.onSent?.({ handle: handle.id, turn: journal.turn.id });
    },
    onPaneLaunched: () => faultPoint('after-launch', req.env),
    onRecorded: (turnKey) => journal.set('running', { turnKey }),
    onHandleChanged: async (provider, change) => {
      let panes = handle.panes;
      if (change.archived) panes = archivePane(panes, change.archived.paneId, change.archived.reason);
      if (change.added) panes = [change.added, ...panes];
      handle = { ...handle, provider, panes };
      await ctx.store.saveHandle(handle);
    },
    ...(req.onProgress ? { onProgress: req.onProgress } : {}),
  };
  const timeoutMs = (req.timeoutSeconds ?? DEFAULT_TIMEOUT_S) * 1000;
  let outcome: TurnOutcome;
  try {
    if (req.signal?.aborted) throw new CalError('interrupted', 'cancelled by the caller before the message was sent');
    if (handle.provider.transport === 'api') {
      outcome = await apiTurn(handle, message, req.env, timeoutMs, hooks, req.signal);
    } else {
      const run = await runProviderTurn({
        adapter: await ctx.adapter(handle.provider.provider),
        handle: handle.provider,
        config: sessionConfig(handle),
        message,
        intent,
        env: req.env,
        timeoutMs,
        hooks,
        tmux: ctx.tmux,
        tmuxSocket: await tmuxSocketFor(ctx.store.layout.tmux),
        paneName: nextPaneName(handle),
        sessionDir: path.join(ctx.store.layout.homes, handle.id),
        started,
        ...(req.signal ? { signal: req.signal } : {}),
      });
      outcome = run.outcome;
    }
  } catch (err) {
    const e = toCalError(err);
    // A timeout leaves the turn running: the CLI may still finish it, and the next continue
    // (or recover) settles it from the transcript.
    const status: TurnStatus = e.kind === 'timeout' ? journal.turn.status : e.kind === 'lost' || e.kind === 'interrupted' ? e.kind : 'failed';
    if (!terminalStatuses.has(journal.turn.status)) await journal.set(status, { error: { kind: e.kind, message: e.message } });
    if (e.kind !== 'timeout') await ctx.event(handle.id, 'failed', journal.turn.id, { kind: e.kind, message: e.message }, req.onEvent);
    throw new CalError(e.kind, e.message, { ...e.details, handle: handle.id, turn: journal.turn.id });
  }
  timingMark('turn-ended');
  await journal.set(outcome.status, {
    answer: outcome.answer,
    turnKey: outcome.turnKey ?? journal.turn.turnKey,
    tools: outcome.tools,
    error: outcome.error ? { kind: errorKindFor(outcome.status), message: outcome.error } : null,
  });
  await ctx.event(handle.id, outcome.status, journal.turn.id, { turnKey: outcome.turnKey }, req.onEvent);
  timingMark('turn-saved');
  return { handle, turn: journal.turn };
}

function archivePane(panes: PaneRecord[], paneId: string, reason: string): PaneRecord[] {
  return panes.map((p) => (p.tmux.paneId === paneId && p.endedAt === null ? { ...p, endedAt: new Date().toISOString(), endReason: reason } : p));
}

/**
 * The tmux session name of a handle's next pane. A session of this name that exists while the
 * handle records no such pane is an orphan: launched by a cal that died before recording it.
 */
export function nextPaneName(handle: AgentSessionHandle): string {
  return `cal-${handle.id}-${handle.panes.length + 1}`;
}
