import type { ChildProcess } from 'node:child_process';
import { closeSync, constants, fstatSync, openSync, readSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensurePlainDirSync } from '../util/private-file.js';
import { spawnChild } from '../util/spawn.js';
import { randomBytes } from '../util/random.js';
import { timingDetail, timingMark } from '../util/timing.js';
import { isPrivateDir, ownedPrivately } from '../util/private-dir.js';

/**
 * The CLI of a resumed structured turn, started by cal's entry (bin/cal.cjs, through
 * commands/early-start.ts and sessions/early-start.ts) before any of cal's own modules load. A
 * CLI that reads its message only after its own start-up (Claude Code reads its config, then
 * stdin, then the session) can be started before cal knows more than its command line: what cal
 * loads and checks then runs while the CLI starts, not before it.
 *
 * The launch comes from the handle's session folder (`homes/<id>/next-launch.json`), where the
 * adapter wrote the launch its next resume makes (`recordNextLaunch`, after every structured
 * turn). It is only a guess: the turn takes the started CLI only when the launch it builds itself
 * is the same argv, environment and working directory, and the transcript is as the entry saw
 * it (`takeEarlyLaunch`); anything else, or a turn that never asks (a stale handle, a busy one,
 * an error), kills it unsent, and it is killed at cal's exit if nothing took it. Nothing is
 * written to it before the turn's records are on disk, and a CLI whose stdin ends empty sends
 * nothing (structured-process.ts).
 *
 * The record is code cal runs, so it is read as the state directory is trusted: every folder on
 * the way (the state directory, homes/, the handle's folder) a plain directory of this user's
 * that nobody else can write, and the file this user's plain file, opened without following a
 * link. zod is not loaded this early (avoiding its load is the point), so the record's shape is
 * checked by hand (`asRecord`).
 */

/** What a CLI process is started with. */
export interface JsonlLaunch {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
}

export interface Exit {
  exitCode: number | undefined;
  signal: string | undefined;
}

/** A spawned CLI with its stdout and stderr in files, its end watched from the spawn on. */
export interface Spawned {
  child: ChildProcess;
  exit: Promise<Exit>;
  outRead: number;
  errRead: number;
}

/** A file nobody else can open: created 0600, unlinked once `open` has opened what it needs. */
export function anonymousFile<T>(content: string, open: (file: string) => T): T {
  const file = path.join(os.tmpdir(), `cal-cli-${randomBytes(8).toString('hex')}`);
  writeFileSync(file, content, { mode: 0o600, flag: 'wx' });
  try {
    return open(file);
  } finally {
    unlinkSync(file);
  }
}

export function spawnToFiles(launch: JsonlLaunch, stdin: number | 'pipe'): Spawned {
  const [outWrite, outRead] = anonymousFile('', (f) => [openSync(f, 'a'), openSync(f, 'r')] as const);
  const [errWrite, errRead] = anonymousFile('', (f) => [openSync(f, 'a'), openSync(f, 'r')] as const);
  let child: ChildProcess;
  try {
    child = spawnChild(launch.argv[0] as string, launch.argv.slice(1), { cwd: launch.cwd, env: launch.env, stdio: [stdin, outWrite, errWrite] });
  } catch (err) {
    for (const fd of [outRead, errRead]) closeSync(fd);
    throw err;
  } finally {
    // The child holds its own copies once it is spawned.
    for (const fd of [outWrite, errWrite]) closeSync(fd);
  }
  timingMark('structured-spawned');
  // The command as cal ran it, for the bench's bare side: the environment only where it differs
  // from cal's own (what the adapter set), never the rest of it.
  timingDetail('structured-command', () => ({
    argv: launch.argv,
    cwd: launch.cwd,
    env: Object.fromEntries(Object.entries(launch.env).filter(([k, v]) => process.env[k] !== v)),
    unset: Object.keys(process.env).filter((k) => launch.env[k] === undefined),
  }));
  // Watched from here on: a CLI that fails to start, or ends before it is followed, is not missed.
  const exit = new Promise<Exit>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve({ exitCode: code ?? undefined, signal: signal ?? undefined }));
  });
  exit.catch(() => undefined);
  // A CLI that ended before its input was written (EPIPE) says why on stderr and by its exit.
  child.stdin?.on('error', () => undefined);
  return { child, exit, outRead, errRead };
}

/** Why a CLI started early went unused, in the timing trace (a benchmark or a test reads it). */
export function earlyLaunchUnused(reason: string): void {
  timingDetail('early-launch-unused', () => reason);
}

/** Whether two launches run the same thing: argv, working directory and environment (in any order). */
export function sameLaunch(a: JsonlLaunch, b: JsonlLaunch): boolean {
  if (a.cwd !== b.cwd || a.argv.length !== b.argv.length || a.argv.some((arg, i) => arg !== b.argv[i])) return false;
  const keys = Object.keys(a.env);
  return keys.length === Object.keys(b.env).length && keys.every((k) => Object.hasOwn(b.env, k) && b.env[k] === a.env[k]);
}

/** A file's size and modification time, or null when it is not there: whether it changed since. */
export function fileStamp(file: string | null | undefined): string | null {
  if (!file) return null;
  try {
    const st = statSync(file);
    return `${st.size}:${st.mtimeMs}`;
  } catch {
    return null;
  }
}

const RECORD_FILE = 'next-launch.json';
const RECORD_MAX_BYTES = 256 * 1024;
/** Variables never written to the state directory, even by name of a value cal set itself. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|AUTH/i;

/** A launch on disk: the environment as what the adapter changed in the caller's. */
interface LaunchRecord {
  /** The provider whose adapter wrote it: the handle must still be that provider's. */
  provider: string;
  argv: string[];
  cwd: string;
  set: Record<string, string>;
  unset: string[];
  /** The transcript the turn resumes from: a CLI started early is used only if it is unchanged since. */
  transcript: string | null;
}

/**
 * Writes the launch a handle's next resumed turn makes, for cal's entry to start early. Only the
 * variables the adapter set or removed are kept, never the caller's own values; a launch that
 * would put a secret-like variable on disk is not recorded (nor anything that fails here: the
 * entry then simply starts nothing). No fsync: a record lost to a crash costs one early start.
 */
export function recordNextLaunch(sessionDir: string, provider: string, launch: JsonlLaunch, callerEnv: Record<string, string>, transcript: string | null): void {
  const file = path.join(sessionDir, RECORD_FILE);
  const set: Record<string, string> = {};
  for (const [k, v] of Object.entries(launch.env)) if (callerEnv[k] !== v) set[k] = v;
  const unset = Object.keys(callerEnv).filter((k) => !Object.hasOwn(launch.env, k));
  // Synchronous, as the state's own writes are (state/fs.ts): this runs between the CLI's answer
  // and cal's exit, where the three thread-pool round trips it made took 10-20 ms (measured on
  // structured Claude turns, the CLI still exiting beside it) and the calls themselves 1-5 ms.
  try {
    if (Object.keys(set).some((k) => SECRET_NAME.test(k))) {
      rmSync(file, { force: true });
      return;
    }
    const record: LaunchRecord = { provider, argv: launch.argv, cwd: launch.cwd, set, unset, transcript };
    // homes/<id> a plain folder: never written into through a link planted in its place.
    ensurePlainDirSync(sessionDir, path.dirname(sessionDir));
    const temp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
    writeFileSync(temp, JSON.stringify(record), { mode: 0o600, flag: 'wx' });
    try {
      renameSync(temp, file);
    } catch (err) {
      rmSync(temp, { force: true });
      throw err;
    }
  } catch {
    // Best effort: without a record the next continue starts its CLI after cal's checks, as before.
  }
}

interface EarlyStart {
  launch: JsonlLaunch;
  spawned: Spawned;
  transcript: string | null;
  /** The transcript's stamp just before the CLI was started. */
  stamp: string | null;
}

let early: EarlyStart | null = null;

/**
 * Starts the launch recorded in a handle's session folder (`recordNextLaunch`), if the folder and
 * the record are this user's alone (`sessionDir`'s parents are the caller's to check) and
 * `belongs` says the handle it is for is there and matches it. Never
 * throws and never prints: whatever goes wrong leaves the turn to start its CLI itself.
 */
export function startRecordedLaunch(sessionDir: string, env: NodeJS.ProcessEnv, belongs: (record: { provider: string; cwd: string; transcript: string | null }) => boolean): void {
  if (early || typeof process.getuid !== 'function') return;
  try {
    if (!isPrivateDir(sessionDir)) return;
    const record = readRecord(path.join(sessionDir, RECORD_FILE));
    // The caller's check that the handle is there and is the one this record was written for.
    if (!record || !belongs(record)) return;
    const launchEnv: Record<string, string> = {};
    for (const [k, v] of Object.entries(env)) if (v !== undefined && !record.unset.includes(k)) launchEnv[k] = v;
    Object.assign(launchEnv, record.set);
    const launch: JsonlLaunch = { argv: record.argv, cwd: record.cwd, env: launchEnv };
    const stamp = fileStamp(record.transcript);
    early = { launch, spawned: spawnToFiles(launch, 'pipe'), transcript: record.transcript, stamp };
    // Whatever path cal takes to its exit, a CLI nothing took ends unsent.
    process.once('exit', () => discardEarlyLaunch('nothing took it before cal exited'));
  } catch {
    early = null;
  }
}

/**
 * The CLI the entry started, for a turn that would launch exactly `launch` on `transcript`: its
 * process and the transcript's stamp from just before its start. Anything else discards it.
 */
export function takeEarlyLaunch(launch: JsonlLaunch, transcript: string | null): { spawned: Spawned; stamp: string | null } | null {
  const started = early;
  if (!started) return null;
  const child = started.spawned.child;
  const running = child.exitCode === null && child.signalCode === null;
  if (!running || started.transcript !== transcript || !sameLaunch(started.launch, launch)) {
    discardEarlyLaunch(!running ? 'it exited' : started.transcript !== transcript ? 'another transcript' : 'another launch');
    return null;
  }
  early = null;
  return { spawned: started.spawned, stamp: started.stamp };
}

/**
 * Kills the CLI the entry started, unless a turn took it (nothing was written to it), and says
 * why in the timing trace: a discard nobody sees is how Codex's early start went unused.
 */
export function discardEarlyLaunch(reason: string): void {
  const started = early;
  if (!started) return;
  early = null;
  earlyLaunchUnused(reason);
  try {
    started.spawned.child.kill('SIGKILL');
    started.spawned.child.stdin?.destroy();
  } finally {
    for (const fd of [started.spawned.outRead, started.spawned.errRead]) closeSync(fd);
  }
}

function readRecord(file: string): LaunchRecord | null {
  return asRecord(readPrivateJson(file, RECORD_MAX_BYTES));
}

/**
 * A JSON file of this user's that nobody else can write, read without following a link or
 * waiting on a FIFO, at most `maxBytes`; null for anything else (never throws).
 */
export function readPrivateJson(file: string, maxBytes: number): unknown {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || !ownedPrivately(st) || st.size > maxBytes) return null;
    const buf = Buffer.alloc(st.size);
    let filled = 0;
    while (filled < buf.length) {
      const n = readSync(fd, buf, filled, buf.length - filled, filled);
      if (n <= 0) break;
      filled += n;
    }
    return JSON.parse(buf.subarray(0, filled).toString('utf8')) as unknown;
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

const isString = (v: unknown): v is string => typeof v === 'string';

/** The record's schema, by hand (see above): anything else is no record. */
function asRecord(v: unknown): LaunchRecord | null {
  if (typeof v !== 'object' || v === null) return null;
  const r = v as Record<string, unknown>;
  const { provider, argv, cwd, set, unset, transcript } = r;
  if (!isString(provider)) return null;
  if (!Array.isArray(argv) || argv.length === 0 || !argv.every(isString) || !path.isAbsolute(argv[0] as string)) return null;
  if (!isString(cwd) || !path.isAbsolute(cwd)) return null;
  if (typeof set !== 'object' || set === null || Array.isArray(set) || !Object.values(set).every(isString)) return null;
  if (!Array.isArray(unset) || !unset.every(isString)) return null;
  if (transcript !== null && !isString(transcript)) return null;
  if ([...argv, cwd, ...Object.keys(set), ...Object.values(set), ...unset].some((s) => (s as string).includes('\0'))) return null;
  return { provider, argv: argv as string[], cwd, set: set as Record<string, string>, unset: unset as string[], transcript: transcript as string | null };
}
