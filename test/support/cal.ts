import { spawn } from 'node:child_process';
import path from 'node:path';
import { execa } from 'execa';
import { processExited } from '../../src/util/process-identity.js';
import { calBin } from './clis.js';

export interface CalRun {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as one JSON object, when it is one. */
  json: any;
}

/** Runs the built `cal` as a black box. */
export async function runCal(args: string[], opts: { env?: Record<string, string | undefined>; input?: string; cwd?: string; timeoutMs?: number } = {}): Promise<CalRun> {
  const res = await execa('node', [calBin, ...args], {
    env: opts.env,
    extendEnv: false,
    input: opts.input,
    stdin: opts.input === undefined ? 'ignore' : undefined,
    reject: false,
    cwd: opts.cwd,
    timeout: opts.timeoutMs ?? 180_000,
  });
  let json: unknown = null;
  try {
    json = JSON.parse(res.stdout);
  } catch {
    json = null;
  }
  return { code: res.exitCode ?? -1, stdout: res.stdout, stderr: res.stderr, json };
}

/** The handle id printed on stderr as `handle: <id>`. */
export function handleFromStderr(stderr: string): string | null {
  return /^handle: (\S+)$/m.exec(stderr)?.[1] ?? null;
}

/** The lifecycle events `--events` printed on stderr, in order. */
export function eventsOf(run: CalRun): string[] {
  return run.stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l).event);
}

export { scratchDir } from './scratch.js';

/** A base environment with nothing of the developer's own CLI config leaking in. */
export function baseEnv(extra: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    LANG: 'C.UTF-8',
    TERM: 'xterm-256color',
    ...extra,
  };
}

/** Kills the tmux server of one state directory (only the one this test started). */
export async function killStateTmux(stateDir: string): Promise<void> {
  const { tmuxSocketFor } = await import('../../src/engine/tmux-socket.js');
  const socket = await tmuxSocketFor(path.join(stateDir, 'tmux'));
  const panes = await execa('tmux', ['-S', socket, 'list-panes', '-a', '-F', '#{pane_pid}'], { reject: false });
  const pids = panes.exitCode === 0 ? panes.stdout.split('\n').map(Number).filter((n) => n > 0) : [];
  await execa('tmux', ['-S', socket, 'kill-server'], { reject: false });
  // A CLI hung up by the server's end still writes its session on the way out (Claude Code does):
  // waited for, briefly, so the test's scratch folder is not removed before and written again after.
  for (let waited = 0; waited < 5000 && !pids.every((pid) => processExited(pid)); waited += 50) await new Promise((r) => setTimeout(r, 50));
}

/**
 * A `cal … --json` run that gets SIGINT once `running()` holds: to its whole process group (a
 * Ctrl-C at a terminal reaches cal and the CLI it runs) or to cal alone (cal's own cancel).
 */
export async function interruptedCal(state: string, args: string[], env: Record<string, string>, opts: { group: boolean; running: () => Promise<boolean> }): Promise<{ code: number | null; stdout: string; ms: number }> {
  const started = Date.now();
  const child = spawn(process.execPath, [calBin, '--state-dir', state, ...args], { env, stdio: ['ignore', 'pipe', 'ignore'], detached: opts.group });
  let stdout = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  for (let i = 0; !(await opts.running()); i++) {
    if (i > 600) throw new Error('timed out waiting for the CLI to get the message');
    await new Promise((r) => setTimeout(r, 50));
  }
  if (opts.group) process.kill(-(child.pid as number), 'SIGINT');
  else child.kill('SIGINT');
  const code = await exited;
  return { code, stdout, ms: Date.now() - started };
}
