import type { ChildProcess, SpawnOptions } from 'node:child_process';
import { statSync } from 'node:fs';
import path from 'node:path';
import type { Options as ExecaOptions, Result as ExecaResult, ResultPromise as ExecaResultPromise } from 'execa';

/**
 * The one door to child processes: every process cal starts (a CLI, tmux, git, a plan's command,
 * a detached cal) is started here, so what a shell would give it holds for all of them
 * (docs/security.md, "Every process cal starts runs as a shell would start it"):
 * - `PWD` names its working directory. A shell keeps PWD equal to the directory it runs a program
 *   in, and programs trust it over getcwd(): OpenCode 1.18 takes its instance's directory from
 *   PWD, so a CLI started with `cwd: D` and the caller's PWD ran in the caller's folder.
 * - stdin is /dev/null unless the caller asks for a pipe (or, for a user's own command, the
 *   terminal): a child never inherits cal's stdin, which may be a FIFO or a terminal it would
 *   block on or steal from.
 * - the environment is the one given, whole (nothing of cal's own is merged in unless asked).
 *
 * Nothing heavy is imported here: cal's entry starts CLIs through it before its own modules load
 * (adapters/early-launch.ts), and execa (~200 ms to import) is loaded only by what uses it.
 * test/unit/spawn-door.test.ts finds every raw spawn outside this file.
 */

export type ChildEnv = Record<string, string | undefined>;

/** Where a child runs and with what. */
export interface ChildPlace {
  /** Its working directory; cal's own when unset. */
  cwd?: string;
  /** Its whole environment; cal's own when unset. */
  env?: ChildEnv;
}

function sameDirectory(a: string, b: string): boolean {
  try {
    const sa = statSync(a);
    const sb = statSync(b);
    return sa.isDirectory() && sa.dev === sb.dev && sa.ino === sb.ino;
  } catch {
    return false;
  }
}

/**
 * The environment a shell gives a program it runs in `cwd`: `env` (cal's own when unset) with
 * PWD naming that directory. With no `cwd` the child runs in cal's own directory, whose name the
 * caller's PWD keeps when it still names it (a shell's logical path through a link); otherwise
 * PWD is the absolute path cal was given.
 */
export function shellEnv(env: ChildEnv | undefined, cwd: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env ?? process.env)) if (typeof value === 'string') out[name] = value;
  if (cwd !== undefined) {
    out.PWD = path.resolve(cwd);
    return out;
  }
  const here = process.cwd();
  const inherited = out.PWD;
  out.PWD = inherited && path.isAbsolute(inherited) && (inherited === here || sameDirectory(inherited, here)) ? inherited : here;
  return out;
}

export type ChildSpawnOptions = Omit<SpawnOptions, 'env' | 'cwd'> & ChildPlace;

/**
 * node:child_process's spawn with the shell's environment (shellEnv) and stdin /dev/null unless
 * `stdio` says otherwise (stdout and stderr are pipes by default).
 */
export function spawnChild(file: string, args: readonly string[], opts: ChildSpawnOptions = {}): ChildProcess {
  // Loaded when a process is started, not with this module: cal's entry loads this module (≈ 5 ms).
  const { spawn } = process.getBuiltinModule('node:child_process');
  const { env, cwd, ...rest } = opts;
  return spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], ...rest, ...(cwd !== undefined ? { cwd } : {}), env: shellEnv(env, cwd) });
}

/** How a short-lived program ended, with what it printed. */
export interface FileRun {
  stdout: string;
  stderr: string;
  /** Its exit status; null when a signal ended it or it never ran. */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** Why it could not be started (ENOENT, EACCES), or null. */
  error: NodeJS.ErrnoException | null;
  /** Whether `timeoutMs` ended it (SIGKILL). */
  timedOut: boolean;
}

export interface FileRunOptions extends ChildPlace {
  /** Killed (SIGKILL) after this long; unset: no limit. */
  timeoutMs?: number;
  /** Output kept of each of stdout and stderr (the rest is dropped); default 1 MiB. */
  maxBuffer?: number;
}

/** Runs a short program to its end with stdin /dev/null and its output collected (a version probe, `tmux -V`). */
export function runFile(file: string, args: readonly string[], opts: FileRunOptions = {}): Promise<FileRun> {
  const max = opts.maxBuffer ?? 1 << 20;
  return new Promise((resolve) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const keep = (into: Buffer[]) => (d: Buffer) => {
      if (into.reduce((n, b) => n + b.length, 0) < max) into.push(d);
    };
    let timedOut = false;
    let error: NodeJS.ErrnoException | null = null;
    let child: ChildProcess;
    try {
      child = spawnChild(file, args, { ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}), ...(opts.env ? { env: opts.env } : {}) });
    } catch (e) {
      resolve({ stdout: '', stderr: '', exitCode: null, signal: null, error: e as NodeJS.ErrnoException, timedOut: false });
      return;
    }
    const timer =
      opts.timeoutMs === undefined
        ? null
        : setTimeout(() => {
            timedOut = true;
            child.kill('SIGKILL');
          }, opts.timeoutMs);
    child.stdout?.on('data', keep(out));
    child.stderr?.on('data', keep(err));
    child.on('error', (e: NodeJS.ErrnoException) => (error = e));
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      const text = (bufs: Buffer[]) => Buffer.concat(bufs).subarray(0, max).toString('utf8');
      resolve({ stdout: text(out), stderr: text(err), exitCode: code, signal, error, timedOut });
    });
  });
}

export type ExecaChildOptions = Omit<ExecaOptions, 'env' | 'extendEnv' | 'cwd'> & ChildPlace;

/** execa's options for a child: the shell's environment, whole, and stdin /dev/null unless asked for. */
function execaOptions(opts: ExecaChildOptions): ExecaOptions {
  const { env, cwd, ...rest } = opts;
  const asksStdin = rest.stdin !== undefined || rest.stdio !== undefined || rest.input !== undefined || rest.inputFile !== undefined;
  return { ...rest, ...(asksStdin ? {} : { stdin: 'ignore' as const }), ...(cwd !== undefined ? { cwd } : {}), env: shellEnv(env, cwd), extendEnv: false };
}

/**
 * Starts a process with execa (loaded here, when first needed) and hands back the running
 * subprocess, wrapped so that awaiting this function does not wait for its end.
 */
export async function startExeca<O extends ExecaChildOptions & ExecaOptions>(file: string, args: readonly string[], opts: O): Promise<{ subprocess: ExecaResultPromise<O> }> {
  const { execa } = await import('execa');
  return { subprocess: execa(file, args, execaOptions(opts)) as unknown as ExecaResultPromise<O> };
}

/** Runs a process with execa to its end (`shell: true` takes `file` as the command line, with no args). */
export async function runExeca<O extends ExecaChildOptions & ExecaOptions>(file: string, args: readonly string[], opts: O): Promise<ExecaResult<O>> {
  const { subprocess } = await startExeca(file, args, opts);
  return (await subprocess) as unknown as ExecaResult<O>;
}
