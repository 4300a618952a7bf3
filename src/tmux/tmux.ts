import { statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { CalError } from '../errors.js';
import { processExited } from '../util/process-identity.js';
import { randomBytes } from '../util/random.js';
import { timingMark } from '../util/timing.js';
import type { PaneScreen } from './screen.js';
import type { OwnPane, PaneInfo, PaneListing, PaneSpec, PaneState } from './pane-types.js';
import { DEAD_PANE_KEPT_SECONDS, deadPaneHook, nudgeUnreaped, REAP_FIELDS } from './pane-types.js';
import { spawnChild } from '../util/spawn.js';

export type { OwnPane, PaneInfo, PaneListing, PaneSpec, PaneState } from './pane-types.js';

/**
 * tmux control on a socket of cal's own (never the user's default server). Knows nothing about
 * which CLI runs in a pane. Every argv is passed as a list: no shell ever sees a message.
 * node:child_process, not execa: this is the hot path of every continuation, and execa's import
 * alone costs more than the whole paste.
 */
/** What a format condition may quote as is: tmux's format syntax has no escape for `,` `}` `#`, and `%` is strftime's. */
const FORMAT_SAFE = /^[A-Za-z0-9_.-]+$/;

/**
 * How a pane's CLI gets its working directory. tmux runs formats in `new-session -c` (`#(cmd)`
 * runs a command in the server; `##`, `#S`, `#{host}` change the path, and tmux then falls back
 * silently to another directory), so no directory name ever reaches tmux's `-c`: the pane starts
 * in `/` and `env --chdir`, given the directory as an argument (which tmux passes as is), changes
 * into it and execs the CLI with PWD set to it (tmux sets PWD to `/`), or exits (125) without
 * running it when it cannot. Not a shell: dash drops the variables whose names are not
 * identifiers, which a pane must keep.
 */
const CHDIR_AND_EXEC = ['env', '--chdir'];

/** Refuses a working directory that is not an absolute path to an existing directory. */
function checkCwd(cwd: string): void {
  if (!path.isAbsolute(cwd)) throw new CalError('usage', `the working directory ${JSON.stringify(cwd)} is not an absolute path`);
  let isDir = false;
  try {
    isDir = statSync(cwd).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) throw new CalError('usage', `the working directory ${JSON.stringify(cwd)} is not an existing directory`);
}

/** A paste buffer of this call alone: cals (and calls of one cal) paste into one server at once. */
function pasteBufferName(): string {
  return `cal-${process.pid}-${randomBytes(6).toString('hex')}`;
}

/** What each branch of pasteIfOwn prints, so cal knows which one tmux took. */
const PASTED = 'cal-pasted';
const NOT_PASTED = 'cal-not-pasted';

interface TmuxResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/** Names tmux's update-environment takes in its space-separated form; others go one per index. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Set on the global options of a server cal started itself with an empty global environment.
 * A server without it (started by a launch that raced the server's exit, or by an older cal)
 * has some pane's variables in its global environment; they are cleared after the launch.
 */
const CLEAN_MARK = '@cal-env-clean';
/** What a tmux client says when the server it reached exited under it (tmux 3.x client.c). */
const SERVER_WENT_AWAY = /server exited unexpectedly|lost server/i;

/** The environment of tmux clients that carry no pane: a server they start knows only these. */
function clientBaseEnv(): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', TERM: 'xterm-256color', LANG: process.env.LANG ?? 'C.UTF-8' };
}

/**
 * tmux ends a command at any argument that ends in `;` (and turns a final `\;` into `;`), so an
 * argument is escaped to reach tmux exactly as given: a message or prompt ending in `;` must not
 * be cut, or end the command so that the arguments after it are read as another tmux command.
 */
function literal(arg: string): string {
  return arg.endsWith(';') ? `${arg.slice(0, -1)}\\;` : arg;
}

/** One tmux argv from several commands, run in order by one client (a failed one ends the list). */
function commandList(commands: string[][]): string[] {
  return commands.flatMap((cmd, i) => [...(i > 0 ? [';'] : []), ...cmd.map(literal)]);
}

export class TmuxServer {
  constructor(readonly socket: string) {}

  /**
   * Runs one tmux client. `doneWhen` ends the wait as soon as the client's output says what the
   * caller needs (the client then exits on its own, unwaited): its exit comes a few ms after its
   * last line, on the way to every paste.
   */
  private tmux(commands: string[][], input?: string, clientEnv?: Record<string, string>, doneWhen?: (stdout: string) => boolean): Promise<TmuxResult> {
    return new Promise((resolve, reject) => {
      // A server started by this call inherits this environment; panes get theirs from newPane.
      const child = spawnChild('tmux', ['-S', this.socket, ...commandList(commands)], {
        env: clientEnv ?? clientBaseEnv(),
        stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout?.on('data', (d: Buffer) => {
        out.push(d);
        if (doneWhen) {
          const stdout = Buffer.concat(out).toString('utf8');
          if (doneWhen(stdout)) resolve({ stdout, stderr: Buffer.concat(err).toString('utf8'), exitCode: 0 });
        }
      });
      child.stderr?.on('data', (d: Buffer) => err.push(d));
      child.on('error', (e: NodeJS.ErrnoException) => {
        reject(
          e.code === 'ENOENT'
            ? new CalError('cli_missing', 'tmux is not installed: install it (apt-get install tmux) and retry')
            : new CalError('internal', `could not run tmux (${e.code ?? e.message})`),
        );
      });
      child.on('close', (code) => {
        resolve({ stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), exitCode: code ?? 1 });
      });
      if (input !== undefined && child.stdin) {
        // tmux may exit (and close its stdin) before it read everything: its stderr says why.
        child.stdin.on('error', () => undefined);
        child.stdin.end(input);
      }
    });
  }

  /** Whether a server listens on the socket (a connect, no tmux process). */
  private serverRunning(): Promise<boolean> {
    return new Promise((resolve) => {
      const conn = net.connect(this.socket);
      conn.on('connect', () => {
        conn.destroy();
        resolve(true);
      });
      conn.on('error', () => resolve(false));
    });
  }

  /** Returns once no server listens on the socket any more (an exiting one has gone), or after 2 s. */
  private async serverGone(): Promise<void> {
    for (let waited = 0; waited < 2000 && (await this.serverRunning()); waited += 20) await new Promise((r) => setTimeout(r, 20));
  }

  /**
   * Starts the server from a client whose argv and environment hold nothing of a pane's (the
   * server keeps the argv of the client that started it for its whole life, readable by any
   * local user), and empties its global environment, so no pane inherits another's variables.
   * exit-empty is off until the first session exists (newPane turns it on again).
   */
  private async startServer(): Promise<void> {
    const base = clientBaseEnv();
    const res = await this.tmux([
      ['start-server'],
      ['set-option', '-g', 'exit-empty', 'off'],
      ...[...Object.keys(base), 'PWD'].map((name) => ['set-environment', '-gu', '--', name]),
      ['set-option', '-g', CLEAN_MARK, '1'],
    ]);
    if (res.exitCode !== 0) throw tmuxFailure('start-server', res);
  }

  /**
   * Clears what a server started elsewhere holds in its global environment (rare path): the
   * names this launch carried, and every name show-environment lists. Only names reach argv:
   * a line of a multi-line value is taken for a name only in the `NAME=` or `-NAME` form, and
   * then only the part before `=`.
   */
  private async cleanGlobalEnv(own: string[]): Promise<void> {
    const global = await this.tmux([['show-environment', '-g']]);
    const listed = global.exitCode !== 0 ? [] : global.stdout.split('\n').map((line) => /^-([A-Za-z_][A-Za-z0-9_]*)$|^([A-Za-z_][A-Za-z0-9_]*)=/.exec(line)).map((m) => m?.[1] ?? m?.[2]);
    const names = [...new Set([...own, ...listed.filter((n): n is string => !!n)])];
    for (let i = 0; i < names.length; i += 100) {
      await this.tmux(names.slice(i, i + 100).map((name) => ['set-environment', '-gu', '--', name]));
    }
    await this.tmux([['set-option', '-g', CLEAN_MARK, '1']]);
  }

  async newPane(spec: PaneSpec): Promise<PaneInfo> {
    // tmux runs formats in `new-session -s` too (`a#{host}` names the session after the host):
    // `#` starts every format, so a name holding one is refused (cal's own names hold none).
    if (spec.session.includes('#') || spec.session === '') throw new CalError('internal', `the tmux session name ${JSON.stringify(spec.session)} is empty or holds "#", which tmux would expand`);
    checkCwd(spec.cwd);
    // env reads a leading NAME=VALUE operand as a variable, not the program to run.
    if (!spec.argv[0] || spec.argv[0].includes('=')) throw new CalError('internal', `the program to run in the pane (${JSON.stringify(spec.argv[0] ?? '')}) is empty or holds "="`);
    // Values never go in argv: any local user can read a process's argv (ps). They travel in the
    // client's environment (private to the user); update-environment copies exactly these names
    // into the new session, and a name the client lacks is removed from it. Names that are not
    // identifiers (`DEPLOY-TOKEN`, `AWS SECRET`) are set one per array index, which tmux neither
    // splits nor reads as a pattern list.
    const names = Object.keys(spec.env).filter((k) => k !== 'TMUX' && k !== 'TMUX_PANE');
    const clientEnv = Object.fromEntries(names.map((k) => [k, spec.env[k] as string]));
    if (!clientEnv.PATH) clientEnv.PATH = process.env.PATH ?? '/usr/bin:/bin';
    const plain = [...new Set([...names.filter((k) => ENV_NAME.test(k)), 'PATH'])];
    const odd = names.filter((k) => !ENV_NAME.test(k));
    if (!(await this.serverRunning())) await this.startServer();
    const launch = () => this.tmux(
      [
        ['set-option', '-g', 'exit-empty', 'on'],
        // Keep a dead pane visible so its last words can be shown as a diagnostic; set before the
        // pane exists, so a CLI that exits at once is still there to read.
        ['set-option', '-wg', 'remain-on-exit', 'on'],
        // ...for a while only: then it ends, so the server ends with its last pane (exit-empty)
        // instead of keeping dead panes for ever. A tmux command (-C) after a delay (-d): no process.
        ['set-hook', '-g', 'pane-died', deadPaneHook(DEAD_PANE_KEPT_SECONDS)],
        ['set-option', '-g', 'update-environment', plain.join(' ')],
        ...odd.map((name, i) => ['set-option', '-g', `update-environment[${plain.length + i}]`, name]),
        [
          'new-session', '-d', '-P', '-F', `#{session_name} #{pane_id} #{pane_pid} #{${CLEAN_MARK}}`,
          '-s', spec.session, '-x', String(spec.width ?? 200), '-y', String(spec.height ?? 50),
          '-c', '/', '--', ...CHDIR_AND_EXEC, spec.cwd, '--', `PWD=${spec.cwd}`, ...spec.argv,
        ],
      ],
      undefined,
      clientEnv,
    );
    let res = await launch();
    if (res.exitCode !== 0 && SERVER_WENT_AWAY.test(res.stderr)) {
      // The server was exiting as this client connected (its last session had just ended: a
      // kill-tmux, then a continue at once): it made no session, so a new server takes the launch.
      await this.serverGone();
      await this.startServer();
      res = await launch();
    }
    if (res.exitCode !== 0) {
      // A server started for this launch (exit-empty off until its first session) would otherwise
      // stay up with no session, for good: it may go once it is empty, as newPane leaves it.
      await this.tmux([['set-option', '-g', 'exit-empty', 'on']]);
      if (/command too long/i.test(res.stderr)) {
        throw new CalError(
          'usage',
          `the launch is too long for tmux: one tmux command holds about 16 KB, and this one names ${names.length} environment variables to pass to the CLI (${plain.join(' ').length + odd.join(' ').length} bytes of names); start cal with fewer variables in its environment`,
        );
      }
      throw tmuxFailure('new-session', res);
    }
    const [session, paneId, pid, clean] = res.stdout.trim().split(' ');
    if (!session || !paneId || !pid) throw new CalError('internal', `tmux new-session printed ${JSON.stringify(res.stdout.trim())}, not "<session> <pane> <pid>"`);
    if (clean !== '1') await this.cleanGlobalEnv([...names, 'PATH', 'PWD']);
    return { session, paneId, pid: Number(pid) };
  }

  async paneState(paneId: string): Promise<PaneState> {
    // Tab-separated: a session name holds no tab, and an empty dead status keeps its place.
    const res = await this.tmux([['display-message', '-p', '-t', paneId, `#{pane_id}\t#{pane_dead_status}\t#{session_name}\t#{pane_pid}\t${REAP_FIELDS}`]]);
    const [id, status, session, pid, dead, ...reap] = res.stdout.replace(/\n$/, '').split('\t');
    if (res.exitCode !== 0 || id !== paneId) return { exists: false, dead: true, deadStatus: null };
    nudgeUnreaped(dead, ...reap);
    return {
      exists: true,
      dead: dead === '1',
      deadStatus: status ? Number(status) : null,
      ...(session ? { session } : {}),
      ...(pid && /^\d+$/.test(pid) ? { pid: Number(pid) } : {}),
    };
  }

  /**
   * Bracketed paste from stdin (no temp file, no shell), then Enter as a separate key, in one
   * tmux call: a failed load or paste ends the list, so Enter never follows a paste that failed.
   * `lineFeeds` keeps LFs (`-r`; tmux pastes CRs) for a TUI that keeps a pasted CR (Cline CLI).
   */
  async paste(paneId: string, text: string, submit = true, lineFeeds = false): Promise<void> {
    const buffer = pasteBufferName();
    const res = await this.tmux(
      [['load-buffer', '-b', buffer, '-'], ['paste-buffer', '-p', ...(lineFeeds ? ['-r'] : []), '-d', '-b', buffer, '-t', paneId], ...(submit ? [['send-keys', '-t', paneId, 'Enter']] : [])],
      text,
    );
    if (res.exitCode !== 0) throw tmuxFailure('paste', res);
    timingMark('paste-sent');
  }

  /**
   * The paste of paste(), made only when the pane is still `own` (the same pane id in the same
   * session, running the same process) and alive: the tmux server checks that in the same command
   * list that pastes, so one client does both, with no gap between the check and the paste.
   * Returns whether it pasted, as the branch tmux took says; when it did not, the buffer (the
   * message) is deleted unpasted. A pane id or session name that a format cannot quote is
   * checked first, in a call of its own.
   */
  async pasteIfOwn(own: OwnPane, text: string, submit = true, lineFeeds = false): Promise<boolean> {
    // The pane's own process has ended (a killed pane or server takes it along; a zombie counts):
    // no pane runs it alive, so nothing would be pasted. Said without starting a tmux client only
    // to hear so (after a lost pane, where the socket tmux leaves behind cannot tell). A process
    // that is still there, or one cal may not signal, goes the tmux way below.
    if (own.pid !== undefined && processExited(own.pid)) return false;
    const paneNumber = /^%(\d+)$/.exec(own.paneId)?.[1];
    if (paneNumber === undefined || !FORMAT_SAFE.test(own.session)) {
      const state = await this.paneState(own.paneId);
      if (!state.exists || state.dead || state.session !== own.session || (own.pid !== undefined && state.pid !== own.pid)) return false;
      await this.paste(own.paneId, text, submit, lineFeeds);
      return true;
    }
    // No `%` in the condition: tmux runs some formats through strftime first (display-message's:
    // a `%6` there comes out padded), so the pane id is compared without its `%`.
    const checks = [`#{==:#{s/^.//:pane_id},${paneNumber}}`, `#{==:#{session_name},${own.session}}`, ...(own.pid !== undefined ? [`#{==:#{pane_pid},${own.pid}}`] : []), '#{?pane_dead,0,1}'];
    const isOwn = checks.reduceRight((rest, check) => `#{&&:${check},${rest}}`);
    const buffer = pasteBufferName();
    const pasteCommands = `paste-buffer -p${lineFeeds ? ' -r' : ''} -d -b ${buffer} -t ${own.paneId}${submit ? ` ; send-keys -t ${own.paneId} Enter` : ''} ; display-message -p ${PASTED}`;
    // The pasted line is printed last, after the paste and Enter succeeded (a failed command ends
    // the list before it), so once it is out the paste is done, whatever the exit.
    const pastedLine = (stdout: string) => stdout.split('\n').slice(0, -1).includes(PASTED);
    const res = await this.tmux(
      [['load-buffer', '-b', buffer, '-'], ['if-shell', '-F', '-t', own.paneId, isOwn, pasteCommands, `delete-buffer -b ${buffer} ; display-message -p ${NOT_PASTED}`]],
      text,
      undefined,
      pastedLine,
    );
    const said = res.stdout.split('\n');
    if (said.includes(PASTED)) {
      if (res.exitCode !== 0) throw tmuxFailure('paste', res);
      timingMark('paste-sent');
      return true;
    }
    if (said.includes(NOT_PASTED)) return false;
    if (res.exitCode !== 0) {
      // No server on the socket, or a command that failed before the paste's end (tmux stops
      // there): no Enter was sent. A buffer loaded before the failure goes.
      if (await this.serverRunning()) await this.tmux([['delete-buffer', '-b', buffer]]);
      return false;
    }
    // Neither branch spoke: whether the message went cannot be told, so it is not sent again.
    throw new CalError('internal', `tmux said neither that it pasted nor that it did not (${JSON.stringify(res.stdout.trim().slice(0, 200))}); the message may be in the pane`);
  }

  async sendKeys(paneId: string, keys: string[]): Promise<void> {
    await this.tmux([['send-keys', '-t', paneId, ...keys]]);
  }

  /** Screen text, for diagnostics and people only: never an answer or a completion signal. */
  async capture(paneId: string, lines = 50): Promise<string> {
    const res = await this.tmux([['capture-pane', '-p', '-J', '-t', paneId, '-S', `-${lines}`]]);
    return res.exitCode === 0 ? res.stdout : '';
  }

  /**
   * The visible screen with its styles, and the cursor, in one tmux client: for an adapter to
   * read its CLI's input box (a control decision, never an answer). Null when the pane is gone.
   */
  async screen(paneId: string): Promise<PaneScreen | null> {
    // Tab-separated, as paneState's: the session name last, since it may hold blanks.
    const res = await this.tmux([
      ['display-message', '-p', '-t', paneId, '#{cursor_x}\t#{cursor_y}\t#{cursor_flag}\t#{pane_id}\t#{pane_dead}\t#{pane_pid}\t#{session_name}'],
      ['capture-pane', '-p', '-e', '-t', paneId],
    ]);
    if (res.exitCode !== 0) return null;
    const [head = '', ...lines] = res.stdout.replace(/\n$/, '').split('\n');
    const [x, y, flag, id = '', dead, pid, session = ''] = head.split('\t');
    if (id !== paneId) return null;
    return {
      lines,
      cursor: { x: Number(x) || 0, y: Number(y) || 0, visible: flag === '1' },
      pane: { id, dead: dead === '1', session, pid: pid && /^\d+$/.test(pid) ? Number(pid) : null },
    };
  }

  async killSession(session: string): Promise<boolean> {
    // No server, no session: a connect says so without starting a tmux client (after a lost
    // pane, the server has often gone with it).
    if (!(await this.serverRunning())) return false;
    const res = await this.tmux([['kill-session', '-t', `=${session}`]]);
    return res.exitCode === 0;
  }

  /** Every pane on the server (none when no server runs), in one client call. */
  async listPanes(): Promise<PaneListing[]> {
    if (!(await this.serverRunning())) return [];
    const res = await this.tmux([['list-panes', '-a', '-F', `#{session_name}\t#{pane_id}\t#{pane_pid}\t#{session_attached}\t#{session_last_attached}\t${REAP_FIELDS}`]]);
    if (res.exitCode !== 0) return [];
    return res.stdout.split('\n').filter(Boolean).map((line) => {
      const [session = '', paneId = '', pid, clients, last, dead, ...reap] = line.split('\t');
      nudgeUnreaped(dead, ...reap);
      return { session, paneId, pid: Number(pid), dead: dead === '1', clients: Number(clients) || 0, lastAttached: last && /^\d+$/.test(last) && last !== '0' ? Number(last) : null };
    });
  }

  async killServer(): Promise<void> {
    await this.tmux([['kill-server']]);
  }

  async hasSession(session: string): Promise<boolean> {
    const res = await this.tmux([['has-session', '-t', `=${session}`]]);
    return res.exitCode === 0;
  }
}

function tmuxFailure(what: string, res: TmuxResult): CalError {
  return new CalError('internal', `tmux ${what} failed (exit ${res.exitCode}): ${res.stderr.trim() || 'no message from tmux'}`);
}
