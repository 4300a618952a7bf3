import { endPane, killPaneNamed } from '../engine/transport.js';
import { toCalError } from '../errors.js';
import type { AgentSessionHandle } from '../handles/schema.js';
import type { EventRecord } from '../state/store.js';
import type { SessionContext } from './context.js';
import { nextPaneName } from './execute-turn.js';

/**
 * Ends a handle's current pane and records it as ended (`endReason`), so cal's records and tmux
 * agree: the handle keeps no current pane, and its next continue resumes the session natively in
 * a new one (design §4 row 4, without a lost_tmux: cal ended it on purpose). The caller holds the
 * handle's lock, or owns the handle's only turn.
 */
export async function retirePane(ctx: SessionContext, handle: AgentSessionHandle, event: string, reason: string, onEvent?: (e: EventRecord) => void): Promise<boolean> {
  const location = handle.provider.tmux;
  if (handle.provider.transport !== 'tmux' || !location) return false;
  await endPane(location, ctx.tmux);
  const endedAt = new Date().toISOString();
  await ctx.store.saveHandle({
    ...handle,
    provider: { ...handle.provider, tmux: null, status: 'idle' },
    panes: handle.panes.map((p) => (p.tmux.paneId === location.paneId && p.tmux.session === location.session && p.endedAt === null ? { ...p, endedAt, endReason: reason } : p)),
  });
  await ctx.event(handle.id, event, undefined, { pane: location.paneId, reason }, onEvent);
  return true;
}

/**
 * A start whose first turn did not complete ends its pane (a CLI left running after a failed
 * first turn only holds memory); the handle stays, and its next continue resumes natively when
 * the CLI recorded a session. A turn that timed out, or a start that found the handle busy, is not
 * over (the CLI may still finish it): its pane stays. A start that never launched a CLI (tmux
 * missing, a launch refused before its pane started) sent nothing and leaves no handle behind
 * (docs/state.md): returns true when it removed the handle so.
 */
export async function endFailedStart(ctx: SessionContext, handleId: string, ending: string): Promise<boolean> {
  if (ending === 'timeout' || ending === 'busy') return false;
  const handle = await ctx.store.loadHandle(handleId).catch(() => null);
  if (!handle || handle.provider.transport !== 'tmux') return false;
  // A pane launched but never recorded (the launch failed half-way) runs under the next name;
  // tmux that cannot even be run has no pane of it.
  const orphan = await killPaneNamed(ctx.store.layout.tmux, nextPaneName(handle), ctx.tmux).catch((err: unknown) => (toCalError(err).kind === 'cli_missing' ? false : null));
  if (orphan === false && launchedNothing(handle)) {
    await ctx.store.deleteHandle(handle);
    return true;
  }
  try {
    if (orphan) await ctx.event(handle.id, 'pane_killed', undefined, { orphan: true });
    if (handle.provider.nativeSessionId !== null) {
      await retirePane(ctx, handle, 'pane_killed', `first turn ${ending}`);
    } else if (handle.provider.tmux && (await endPane(handle.provider.tmux, ctx.tmux))) {
      // No session to resume: the handle keeps pointing at the ended pane, so its next continue
      // finds it gone and says non_continuable (a pane record cleared here would read as a
      // session that never launched, and be launched afresh).
      await ctx.event(handle.id, 'pane_killed', undefined, { pane: handle.provider.tmux.paneId, reason: `first turn ${ending}` });
    }
  } catch {
    // Best effort: cal reap (or the policy at the next turn's end) ends what is left.
  }
  return false;
}

/** No pane was ever recorded and the CLI recorded nothing: no CLI ever ran for this handle. */
function launchedNothing(handle: AgentSessionHandle): boolean {
  const p = handle.provider;
  return handle.panes.length === 0 && p.tmux === null && p.nativeSessionId === null && p.transcript === null;
}
