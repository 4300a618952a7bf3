import { checkPinned } from '../adapters/resolve.js';
import { CalError, toCalError } from '../errors.js';
import type { PinnedCli, ProviderHandle } from '../handles/schema.js';
import { prepareLaunch } from './folder-trust.js';
import { prepareMessage, type PreparedMessage } from './message.js';
import { checkStability } from './stability.js';
import { awaitStructuredTurn, runStructuredTurn } from './structured-continuation.js';
import { endPane } from './transport.js';
import { awaitRecorded, launchAndFollow, pasteAndFollow } from './tmux-turn.js';
import type { EngineResult, TurnIntent, TurnRequest } from './types.js';

/**
 * The provider-level continuation decision of design §4, in one place. The agent-session layer
 * asks "continue this" with one TurnRequest; which row of the table applies is decided here
 * from the provider handle alone, never by the caller.
 *
 * | row | the handle                                       | route               |
 * |-----|--------------------------------------------------|---------------------|
 * | 1   | transport api                                    | non_applicable      |
 * | 2   | fingerprint differs from the request             | stale_handle        |
 * | 6   | transport structured (or acp)                    | structured turn     |
 * | 6   | transport structured, a turn its CLI already has | follow it, no send  |
 * | 3   | tmux, its own pane alive                         | paste               |
 * | 4   | tmux, pane gone, native id                       | lost_tmux + resume  |
 * | 5   | tmux, pane gone, no native id, nothing delivered | fresh launch        |
 * | 5   | tmux, pane gone, no native id, a pane had it     | non_continuable     |
 * | 7   | the CLI refuses the resume                       | resume_unavailable  |
 */
export type Route =
  | { kind: 'non_applicable' }
  | { kind: 'structured' }
  | { kind: 'structured_await' }
  | { kind: 'paste' }
  | { kind: 'await' }
  | { kind: 'launch'; mode: 'fresh' | 'resume'; lostPane: boolean }
  | { kind: 'non_continuable'; lostPane: boolean };

/** What the decision reads off a provider handle (and the pane's liveness, asked of tmux). */
export interface RouteFacts {
  transport: ProviderHandle['transport'];
  intent: TurnIntent['kind'];
  hasPane: boolean;
  paneAlive: boolean;
  hasNativeId: boolean;
  hasTranscript: boolean;
}

/** The decision table itself: pure, so every row is tested without tmux or a CLI. */
export function decideRoute(f: RouteFacts): Route {
  if (f.transport === 'api') return { kind: 'non_applicable' };
  if (f.transport === 'structured' || f.transport === 'acp') return f.intent === 'await' ? { kind: 'structured_await' } : { kind: 'structured' };
  if (f.intent === 'await') return { kind: 'await' };
  if (f.hasPane && f.paneAlive) return { kind: 'paste' };
  const lostPane = f.hasPane;
  if (f.hasNativeId && f.hasTranscript) return { kind: 'launch', mode: 'resume', lostPane };
  // No native id: a session that never had a pane never received a message, so its first turn
  // is launched now; one whose pane got the message but never recorded it cannot be resumed.
  if (!f.hasPane && !f.hasNativeId && !f.hasTranscript) return { kind: 'launch', mode: 'fresh', lostPane: false };
  return { kind: 'non_continuable', lostPane };
}

/**
 * Checks made before a turn is recorded (design §4 rows 1 and 2, and the message itself):
 * nothing is written and nothing is sent when one fails. Returns the message as the CLI gets it.
 */
export async function preflight(req: Pick<TurnRequest, 'adapter' | 'handle' | 'message' | 'stability' | 'hooks'>): Promise<PreparedMessage> {
  if (req.handle.transport === 'api') {
    throw new CalError('non_applicable', `${req.handle.provider} is an API provider: it has no native continuation; continue it with cal continue (agent level)`);
  }
  if (req.stability) {
    try {
      await checkStability(req.stability.recorded, req.stability.requested, { workingDir: true });
    } catch (err) {
      const e = toCalError(err);
      if (e.kind === 'stale_handle') await req.hooks.emit('stale_handle', { field: e.details.field, expected: e.details.expected, actual: e.details.actual });
      throw e;
    }
  }
  return prepareMessage(req.adapter, req.handle.transport, req.message);
}

/** Runs one turn of a CLI session, by the row of §4 that applies to its handle now. */
export async function runProviderTurn(req: TurnRequest): Promise<EngineResult> {
  if (!req.handle.cli) throw new CalError('internal', 'provider handle without a pinned CLI');
  const msg = await preflight({ ...req, stability: undefined });
  const location = req.handle.tmux;
  const facts: RouteFacts = {
    transport: req.handle.transport,
    intent: req.intent.kind,
    hasPane: location !== null,
    // A pane is taken for alive until the paste, where tmux checks it with the paste itself (one
    // tmux call for both); one that is not alive is decided again below, as row 4 or 5.
    paneAlive: location !== null && req.handle.transport === 'tmux' && req.intent.kind === 'deliver',
    hasNativeId: req.handle.nativeSessionId !== null,
    hasTranscript: req.handle.transcript !== null,
  };
  let route = decideRoute(facts);
  if (route.kind === 'paste') {
    const pasted = await pasteAndFollow(req, msg);
    if (pasted) return pasted;
    route = decideRoute({ ...facts, paneAlive: false });
  }
  switch (route.kind) {
    case 'non_applicable':
      throw new CalError('non_applicable', `${req.handle.provider} is an API provider: it has no native continuation`);
    case 'structured':
      // What the CLI gets: the message behind its headless (or ACP) guard.
      return runStructuredTurn(req, msg.typed);
    case 'structured_await':
      return awaitStructuredTurn(req, msg.text, (req.intent as Extract<TurnIntent, { kind: 'await' }>).sentAt);
    case 'await':
      return awaitRecorded(req, msg.text, (req.intent as Extract<TurnIntent, { kind: 'await' }>).sentAt);
    case 'paste':
      // Decided again with the pane gone: a paste cannot be its answer.
      throw new CalError('internal', 'a pane found gone was routed to a paste');
    case 'launch':
    case 'non_continuable': {
      let handle = route.lostPane ? await archiveLostPane(req) : req.handle;
      if (route.kind === 'non_continuable') {
        throw new CalError(
          'non_continuable',
          `the ${req.adapter.name} session never recorded a first turn, so it has no native id to resume; start a new session`,
        );
      }
      if (route.mode === 'resume') {
        handle = { ...handle, cli: await checkPinned(handle.cli as PinnedCli, req.env, req.adapter.executable, req.adapter.readVersion) };
        await prepareLaunch(req.adapter, req.env, req.config, 'tmux');
        await req.hooks.emit('resuming', { nativeSessionId: handle.nativeSessionId });
      } else {
        await prepareLaunch(req.adapter, req.env, req.config, 'tmux');
      }
      return launchAndFollow({ ...req, handle }, msg, route.mode);
    }
  }
}

/**
 * Row 4's first half: the pane is gone (or is no longer the handle's own). It is reported,
 * cleared (a dead pane lingers under remain-on-exit) and archived in the pane history.
 */
async function archiveLostPane(req: TurnRequest): Promise<ProviderHandle> {
  const lost = req.handle.tmux;
  if (!lost) return req.handle;
  await req.hooks.emit('lost_tmux', { pane: lost.paneId });
  // The session name is the handle's own (cal-<id>-<n>): killing it never reaches another
  // handle's pane, even when the pane id now names one.
  await endPane(lost, req.tmux);
  const handle: ProviderHandle = { ...req.handle, tmux: null, status: 'lost' };
  await req.hooks.onHandleChanged(handle, { archived: { paneId: lost.paneId, reason: 'pane gone' } });
  return handle;
}
