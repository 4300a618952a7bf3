import { createHash } from 'node:crypto';
import { lstatSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { isPrivateDir } from '../../util/private-dir.js';
import { runExeca } from '../../util/spawn.js';
import { z } from '../../util/zod.js';
/**
 * A fast way to run cal's read-only SELECTs on OpenCode's store. `opencode db <sql>` starts the
 * whole CLI for each query (about a second of CPU, measured on 1.18.33), too slow to follow a turn
 * closely. OpenCode ships as a Bun-compiled binary, and such a binary started with `BUN_BE_BUN=1`
 * is the Bun runtime it was built with (1.18.33: Bun 1.3.14): `bun:sqlite` then opens the same
 * database file, write-ahead log included, read-only, in a few tens of milliseconds. The file is
 * the one `opencode db path` names for that environment, asked once.
 *
 * Whatever does not work this way (a binary that is not Bun, a store not created yet, a query that
 * fails) returns null, and the caller asks `opencode db` as before.
 */
const READ_SCRIPT =
  'import { Database } from "bun:sqlite";' +
  'const [file, sql] = process.argv.slice(-2);' +
  'const db = new Database(file, { readonly: true });' +
  'try { process.stdout.write(JSON.stringify(db.query(sql).all())); } finally { db.close(); }';

/**
 * How long a helper run that starts the whole CLI (`db`, `db path`, `import`, its own `--version`)
 * may take. Such a start costs seconds of CPU (Kilo 10-20 s): with the load at 10 on two cores,
 * `kilo import` and `kilo db` were killed at the 30 s this once was (a CI run, 2026-12-06),
 * failing turns that were only slow. The turn's own timeout still bounds the whole.
 */
export const CLI_HELPER_TIMEOUT_MS = 120_000;
/** A read through the binary's Bun, which starts no CLI (tens of milliseconds): the polling read. */
const BUN_READ_TIMEOUT_MS = 30_000;

/** Per executable and version: whether `BUN_BE_BUN=1` makes it Bun (its `--version` then is not the CLI's own). */
const bunBacked = new Map<string, Promise<boolean>>();
/** Per executable and environment: the database `opencode db path` names. */
const databases = new Map<string, Promise<string | null>>();

/** The CLI a query reads through: its real path and the version cal pinned (read once, at start). */
export interface StoreCli {
  readonly realPath: string;
  readonly version: string;
}

async function run(executable: string, args: string[], env: Record<string, string>, timeout: number): Promise<{ ok: boolean; stdout: string }> {
  const r = await runExeca(executable, args, { env, reject: false, timeout });
  return { ok: r.exitCode === 0, stdout: String(r.stdout).trim() };
}

/**
 * Compared with the pinned version, not with a second `--version` of the CLI's own: that one
 * starts the whole CLI (Kilo 7.7.7 1.4 s of CPU, OpenCode 1.18.33 0.9 s; measured), in every cal
 * process that reads the store.
 */
function isBunBacked(cli: StoreCli, env: Record<string, string>): Promise<boolean> {
  const key = `${cli.realPath}\0${cli.version}`;
  let known = bunBacked.get(key);
  if (!known) {
    const base = { PATH: env.PATH ?? '/usr/bin:/bin', HOME: env.HOME ?? '/' };
    // Bun prints its bare version; a binary that ignores BUN_BE_BUN prints the CLI's own, maybe
    // with more words: only another x.y.z than the pinned one's is Bun.
    const core = (v: string) => /^v?(\d+\.\d+\.\d+)/.exec(v.trim())?.[1] ?? null;
    known = run(cli.realPath, ['--version'], { ...base, BUN_BE_BUN: '1' }, BUN_READ_TIMEOUT_MS).then(
      (asBun) => asBun.ok && /^\d+\.\d+\.\d+$/.test(asBun.stdout) && core(asBun.stdout) !== core(cli.version),
      () => false,
    );
    bunBacked.set(key, known);
  }
  return known;
}

const CachedDatabase = z.object({ database: z.string() });

/**
 * `db path` starts the whole CLI (Kilo 7.7.7 about 3.5 s of CPU, OpenCode 1.18.33 1.5 s;
 * measured), once in every cal process: its answer is kept in `cacheDir` (cal's folder in the
 * CLI's data folder, when it exists) under a name made of the executable's identity and the
 * environment, and taken from there only while it still names a regular file.
 */
function cacheFileOf(cacheDir: string, executable: string, env: Record<string, string>): string | null {
  try {
    const st = statSync(executable);
    const key = JSON.stringify([executable, st.size, st.mtimeMs, st.ino, Object.entries(env).sort(([a], [b]) => (a < b ? -1 : 1))]);
    return path.join(cacheDir, `db-path-${createHash('sha256').update(key).digest('hex').slice(0, 24)}.json`);
  } catch {
    return null;
  }
}

function isRegularFile(file: string): boolean {
  return lstatSync(file, { throwIfNoEntry: false })?.isFile() ?? false;
}

function cachedDatabase(cacheFile: string | null): string | null {
  if (!cacheFile || !isPrivateDir(path.dirname(cacheFile))) return null;
  try {
    const cached = CachedDatabase.safeParse(JSON.parse(readFileSync(cacheFile, 'utf8')));
    return cached.success && path.isAbsolute(cached.data.database) && isRegularFile(cached.data.database) ? cached.data.database : null;
  } catch {
    return null;
  }
}

async function keepDatabase(cacheFile: string | null, database: string): Promise<void> {
  if (!cacheFile || !isPrivateDir(path.dirname(cacheFile))) return;
  const { default: writeFileAtomic } = await import('write-file-atomic');
  await writeFileAtomic(cacheFile, JSON.stringify({ database }) + '\n', { mode: 0o600 }).catch(() => undefined);
}

function databaseFile(executable: string, env: Record<string, string>, cacheDir: string | null): Promise<string | null> {
  const key = `${executable}\0${JSON.stringify(env)}`;
  let known = databases.get(key);
  if (!known) {
    const cacheFile = cacheDir ? cacheFileOf(cacheDir, executable, env) : null;
    const cached = cachedDatabase(cacheFile);
    known = cached
      ? Promise.resolve(cached)
      : run(executable, ['db', 'path'], env, CLI_HELPER_TIMEOUT_MS).then(
          async (r) => {
            const file = r.ok && r.stdout.startsWith('/') && !r.stdout.includes('\n') ? r.stdout : null;
            if (file && isRegularFile(file)) await keepDatabase(cacheFile, file);
            return file;
          },
          () => null,
        );
    databases.set(key, known);
    // A path not found is asked again next time (the store may not exist yet).
    void known.then((file) => {
      if (file === null) databases.delete(key);
    });
  }
  return known;
}

/**
 * The rows of a read-only `sql` through the binary's own Bun, or null when that cannot answer.
 * `cacheDir` is where `db path`'s answer may be kept between processes (null: not kept).
 */
export async function bunQuery(cli: StoreCli, env: Record<string, string>, sql: string, cacheDir: string | null): Promise<unknown[] | null> {
  if (!(await isBunBacked(cli, env))) return null;
  const file = await databaseFile(cli.realPath, env, cacheDir);
  if (!file) return null;
  const r = await run(cli.realPath, ['-e', READ_SCRIPT, file, sql], { PATH: env.PATH ?? '/usr/bin:/bin', HOME: env.HOME ?? '/', BUN_BE_BUN: '1' }, BUN_READ_TIMEOUT_MS).catch(() => null);
  if (!r?.ok) return null;
  try {
    const rows: unknown = JSON.parse(r.stdout || '[]');
    return Array.isArray(rows) ? rows : null;
  } catch {
    return null;
  }
}
