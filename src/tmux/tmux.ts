import { execa } from 'execa';
import { CalError } from '../errors.js';

/**
 * tmux control on a socket of cal's own (never the user's default server). Knows nothing about
 * which CLI runs in a pane. Every argv is passed as a list: no shell ever sees a message.
 */
export interface PaneSpec {
  session: string;
  cwd: string;
  argv: string[];
  /** The complete environment of the pane's process (the server's own is kept minimal). */
  env: Record<string, string>;
  width?: number;
  height?: number;
}

export interface PaneInfo {
  session: string;
  paneId: string;
  pid: number;
}

export interface PaneState {
  exists: boolean;
  dead: boolean;
  deadStatus: number | null;
  /** The tmux session the pane belongs to, and its process (pane ids are reused by a new server). */
  session?: string;
  pid?: number;
}

/** Names tmux's update-environment list can carry (space-separated); others go by -e. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export class TmuxServer {
  constructor(readonly socket: string) {}

  private async tmux(args: string[], input?: string, clientEnv?: Record<string, string>): Promise<{ stdout: string; exitCode: number; stderr: string }> {
    try {
      const result = await execa('tmux', ['-S', this.socket, ...args], {
        input,
        reject: false,
        // A server started by this call inherits this environment; panes get theirs from newPane.
        env: clientEnv ?? { PATH: process.env.PATH ?? '/usr/bin:/bin', TERM: 'xterm-256color', LANG: process.env.LANG ?? 'C.UTF-8' },
        extendEnv: false,
        stripFinalNewline: false,
      });
      return { stdout: result.stdout, stderr: result.stderr, exitCode: result.exitCode ?? 1 };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new CalError('cli_missing', 'tmux is not installed: install it (apt-get install tmux) and retry');
      }
      throw err;
    }
  }

  async newPane(spec: PaneSpec): Promise<PaneInfo> {
    // Values never go in argv: any local user can read a process's argv (ps), and a tmux server
    // keeps the argv of the client that started it. They travel in the client's environment
    // (private to the user); update-environment copies exactly these names into the session and
    // removes any other name the server's global environment holds.
    const names = Object.keys(spec.env).filter((k) => ENV_NAME.test(k) && k !== 'TMUX' && k !== 'TMUX_PANE');
    const oddArgs = Object.entries(spec.env)
      .filter(([k]) => !ENV_NAME.test(k))
      .flatMap(([k, v]) => ['-e', `${k}=${v}`]);
    const global = await this.tmux(['show-environment', '-g']);
    const stale = global.exitCode === 0 ? global.stdout.split('\n').map((l) => /^-?([A-Za-z_][A-Za-z0-9_]*)/.exec(l)?.[1]).filter((k): k is string => !!k) : [];
    const update = [...new Set([...names, ...stale])].join(' ');
    const clientEnv = Object.fromEntries(names.map((k) => [k, spec.env[k] as string]));
    if (!clientEnv.PATH) clientEnv.PATH = process.env.PATH ?? '/usr/bin:/bin';
    const res = await this.tmux([
      'set-option', '-g', 'update-environment', update, ';',
      'new-session', '-d', '-P', '-F', '#{session_name} #{pane_id} #{pane_pid}',
      '-s', spec.session, '-x', String(spec.width ?? 200), '-y', String(spec.height ?? 50),
      '-c', spec.cwd, ...oddArgs, '--', ...spec.argv,
    ], undefined, clientEnv);
    if (res.exitCode !== 0) throw new Error(`tmux new-session failed: ${res.stderr.trim()}`);
    const [session, paneId, pid] = res.stdout.trim().split(' ');
    if (!session || !paneId || !pid) throw new Error(`unexpected tmux output: ${res.stdout}`);
    // Keep a dead pane visible so its last words can be shown as a diagnostic.
    await this.tmux(['set-option', '-t', session, 'remain-on-exit', 'on']);
    return { session, paneId, pid: Number(pid) };
  }

  async paneState(paneId: string): Promise<PaneState> {
    // Tab-separated: a session name holds no tab, and an empty dead status keeps its place.
    const res = await this.tmux(['display-message', '-p', '-t', paneId, '#{pane_id}\t#{pane_dead}\t#{pane_dead_status}\t#{session_name}\t#{pane_pid}']);
    const [id, dead, status, session, pid] = res.stdout.replace(/\n$/, '').split('\t');
    if (res.exitCode !== 0 || id !== paneId) return { exists: false, dead: true, deadStatus: null };
    return {
      exists: true,
      dead: dead === '1',
      deadStatus: status ? Number(status) : null,
      ...(session ? { session } : {}),
      ...(pid && /^\d+$/.test(pid) ? { pid: Number(pid) } : {}),
    };
  }

  async isPaneAlive(paneId: string): Promise<boolean> {
    const state = await this.paneState(paneId);
    return state.exists && !state.dead;
  }

  /** Bracketed paste from stdin (no temp file, no shell), then Enter as a separate key. */
  async paste(paneId: string, text: string, submit = true): Promise<void> {
    const buffer = `cal-${process.pid}-${Date.now()}`;
    const load = await this.tmux(['load-buffer', '-b', buffer, '-'], text);
    if (load.exitCode !== 0) throw new Error(`tmux load-buffer failed: ${load.stderr.trim()}`);
    const paste = await this.tmux(['paste-buffer', '-p', '-d', '-b', buffer, '-t', paneId]);
    if (paste.exitCode !== 0) throw new Error(`tmux paste-buffer failed: ${paste.stderr.trim()}`);
    if (submit) await this.sendKeys(paneId, ['Enter']);
  }

  async sendKeys(paneId: string, keys: string[]): Promise<void> {
    await this.tmux(['send-keys', '-t', paneId, ...keys]);
  }

  /** Screen text, for diagnostics and people only: never an answer or a completion signal. */
  async capture(paneId: string, lines = 50): Promise<string> {
    const res = await this.tmux(['capture-pane', '-p', '-J', '-t', paneId, '-S', `-${lines}`]);
    return res.exitCode === 0 ? res.stdout : '';
  }

  async killSession(session: string): Promise<boolean> {
    const res = await this.tmux(['kill-session', '-t', `=${session}`]);
    return res.exitCode === 0;
  }

  async killServer(): Promise<void> {
    await this.tmux(['kill-server']);
  }

  async hasSession(session: string): Promise<boolean> {
    const res = await this.tmux(['has-session', '-t', `=${session}`]);
    return res.exitCode === 0;
  }
}
