import { runExeca } from '../../util/spawn.js';
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

/** Per executable: whether `BUN_BE_BUN=1` makes it Bun (its `--version` then is not the CLI's own). */
const bunBacked = new Map<string, Promise<boolean>>();
/** Per executable and environment: the database `opencode db path` names. */
const databases = new Map<string, Promise<string | null>>();

async function run(executable: string, args: string[], env: Record<string, string>, timeout: number): Promise<{ ok: boolean; stdout: string }> {
  const r = await runExeca(executable, args, { env, reject: false, timeout });
  return { ok: r.exitCode === 0, stdout: String(r.stdout).trim() };
}

function isBunBacked(executable: string, env: Record<string, string>): Promise<boolean> {
  let known = bunBacked.get(executable);
  if (!known) {
    const base = { PATH: env.PATH ?? '/usr/bin:/bin', HOME: env.HOME ?? '/' };
    known = Promise.all([run(executable, ['--version'], { ...base, BUN_BE_BUN: '1' }, BUN_READ_TIMEOUT_MS), run(executable, ['--version'], { ...env, ...base }, CLI_HELPER_TIMEOUT_MS)]).then(
      ([asBun, own]) => asBun.ok && own.ok && /^\d+\.\d+\.\d+/.test(asBun.stdout) && asBun.stdout !== own.stdout,
      () => false,
    );
    bunBacked.set(executable, known);
  }
  return known;
}

function databaseFile(executable: string, env: Record<string, string>): Promise<string | null> {
  const key = `${executable}\0${JSON.stringify(env)}`;
  let known = databases.get(key);
  if (!known) {
    known = run(executable, ['db', 'path'], env, CLI_HELPER_TIMEOUT_MS).then(
      (r) => (r.ok && r.stdout.startsWith('/') && !r.stdout.includes('\n') ? r.stdout : null),
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

/** The rows of a read-only `sql` through the binary's own Bun, or null when that cannot answer. */
export async function bunQuery(executable: string, env: Record<string, string>, sql: string): Promise<unknown[] | null> {
  if (!(await isBunBacked(executable, env))) return null;
  const file = await databaseFile(executable, env);
  if (!file) return null;
  const r = await run(executable, ['-e', READ_SCRIPT, file, sql], { PATH: env.PATH ?? '/usr/bin:/bin', HOME: env.HOME ?? '/', BUN_BE_BUN: '1' }, BUN_READ_TIMEOUT_MS).catch(() => null);
  if (!r?.ok) return null;
  try {
    const rows: unknown = JSON.parse(r.stdout || '[]');
    return Array.isArray(rows) ? rows : null;
  } catch {
    return null;
  }
}
