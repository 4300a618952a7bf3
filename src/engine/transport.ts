import type { DraftControl } from '../adapters/types.js';
import type { ProviderHandle, TmuxLocation } from '../handles/schema.js';
import { endTagged } from '../util/tagged-processes.js';
import { TmuxServer } from '../tmux/tmux.js';
import { PANE_TAG_ENV, paneAlive, samePane, type PaneListing, type TmuxFactory } from './tmux-control.js';
import { tmuxSocketFor } from './tmux-socket.js';
import { spawnChild } from '../util/spawn.js';

/**
 * The transport helpers the layers above use, behind the engine: they name a session by its
 * provider handle and never see tmux. Each takes the tmux factory the engine was given.
 */
export const realTmux: TmuxFactory = (socket) => new TmuxServer(socket);

/**
 * Ends a pane and every process it started, wherever they went (a detached shell tool, an MCP
 * server that ignores SIGHUP): no process of an ended pane may go on holding the session.
 */
export async function endPane(location: TmuxLocation, tmux: TmuxFactory = realTmux): Promise<boolean> {
  const killed = await tmux(location.socket).killSession(location.session);
  if (location.tag) await endTagged(`${PANE_TAG_ENV}=${location.tag}`);
  return killed;
}

/** Ends a session's live transport (its tmux pane). Returns what was killed, or null. */
export async function killTransport(handle: ProviderHandle, tmux: TmuxFactory = realTmux): Promise<{ paneId: string } | null> {
  if (!handle.tmux) return null;
  const killed = await endPane(handle.tmux, tmux);
  return killed ? { paneId: handle.tmux.paneId } : null;
}

/** Ends a tmux session by name on cal's socket for this state directory (an orphan pane). */
export async function killPaneNamed(transportDir: string, session: string, tmux: TmuxFactory = realTmux): Promise<boolean> {
  return tmux(await tmuxSocketFor(transportDir)).killSession(session);
}

/** Whether the session's current pane is alive and its own (for inspect; never a completion signal). */
export async function transportAlive(handle: ProviderHandle, tmux: TmuxFactory = realTmux): Promise<boolean> {
  if (!handle.tmux) return false;
  return paneAlive(tmux(handle.tmux.socket), handle.tmux);
}

/**
 * transportAlive of many sessions at once, for listings: one `list-panes` per tmux server, not one
 * tmux client per handle (200 handles on one server took 200 clients, 0.65 s here).
 */
export async function transportsAlive(handles: readonly ProviderHandle[], tmux: TmuxFactory = realTmux): Promise<boolean[]> {
  const listings = new Map<string, Promise<PaneListing[]>>();
  return Promise.all(
    handles.map(async ({ tmux: location }) => {
      if (!location) return false;
      let listing = listings.get(location.socket);
      if (!listing) listings.set(location.socket, (listing = tmux(location.socket).listPanes()));
      const pane = (await listing).find((p) => p.paneId === location.paneId);
      return pane !== undefined && !pane.dead && samePane(location, { exists: true, dead: false, deadStatus: null, session: pane.session, pid: pane.pid });
    }),
  );
}

/** The pane's current screen, for people (inspect's preview); never an answer. */
export async function transportScreen(handle: ProviderHandle, lines = 50, tmux: TmuxFactory = realTmux): Promise<string | null> {
  if (!handle.tmux) return null;
  const server = tmux(handle.tmux.socket);
  // Another session's pane under a reused id is not this session's screen.
  if (!samePane(handle.tmux, await server.paneState(handle.tmux.paneId))) return null;
  return server.capture(handle.tmux.paneId, lines);
}

/** argv that attaches a terminal to the session's pane on cal's own tmux socket. */
export function attachArgv(handle: ProviderHandle): string[] | null {
  if (!handle.tmux) return null;
  return ['tmux', '-S', handle.tmux.socket, 'attach-session', '-t', `=${handle.tmux.session}`];
}

/**
 * Runs the attach on this process's terminal and waits for the detach (or a failure); its exit
 * status. cal's tmux server is not the one the user may be sitting in: attaching from inside tmux
 * is a deliberate nesting, so tmux's own guard variables are dropped for the child.
 */
export function attachTerminal(handle: ProviderHandle): Promise<number> {
  const argv = attachArgv(handle);
  if (!argv) return Promise.resolve(1);
  const env = { ...process.env };
  delete env.TMUX;
  delete env.TMUX_PANE;
  return new Promise((resolve) => {
    const [cmd, ...args] = argv as [string, ...string[]];
    // The user's terminal, attached: stdio is cal's own.
    const child = spawnChild(cmd, args, { stdio: 'inherit', env });
    child.on('error', () => resolve(127));
    child.on('exit', (code) => resolve(code ?? 1));
  });
}

/**
 * Presses keys in a session's current pane, as a person at the terminal would (certify's
 * interrupt scenarios press Escape). Returns false when the session has no live pane.
 */
export async function pressKeys(handle: ProviderHandle, keys: string[], tmux: TmuxFactory = realTmux): Promise<boolean> {
  if (!handle.tmux) return false;
  const server = tmux(handle.tmux.socket);
  if (!(await paneAlive(server, handle.tmux))) return false;
  await server.sendKeys(handle.tmux.paneId, keys);
  return true;
}

/** Ends every pane of one state directory (its own tmux server): for demo and certify scratch state. */
export async function shutdownTransports(transportDir: string, tmux: TmuxFactory = realTmux): Promise<void> {
  await tmux(await tmuxSocketFor(transportDir)).killServer();
}

/** Every pane on cal's tmux server of one state directory (none when it is not running). */
export async function listPanes(transportDir: string, tmux: TmuxFactory = realTmux): Promise<PaneListing[]> {
  return tmux(await tmuxSocketFor(transportDir)).listPanes();
}

/** The listed pane that is this location's own (same id, session and, where recorded, process), if any. */
export function findOwnPane(location: TmuxLocation, panes: readonly PaneListing[]): PaneListing | null {
  return panes.find((p) => p.paneId === location.paneId && samePane(location, { exists: true, dead: p.dead, deadStatus: null, session: p.session, pid: p.pid })) ?? null;
}

/**
 * What the input box of a live pane holds, by its adapter's reader ('' when empty): a control
 * decision (may an attached pane be reaped), never an answer. Null when the box cannot be read.
 */
export async function inputBoxText(location: TmuxLocation, draft: DraftControl | undefined, tmux: TmuxFactory = realTmux): Promise<string | null> {
  if (!draft) return null;
  const screen = await tmux(location.socket).screen(location.paneId);
  return screen ? draft.read(screen) : null;
}
