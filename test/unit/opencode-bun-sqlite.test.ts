import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { bunQuery } from '../../src/adapters/opencode/bun-sqlite.js';

/**
 * OpenCode's store read through the binary's own Bun (`BUN_BE_BUN=1`): only when the binary is
 * Bun-backed (its `--version` under BUN_BE_BUN is not the pinned version), at the database
 * `opencode db path` names, kept between cal processes; anything else is null, so the caller asks
 * `opencode db`. Fake executables stand in for the CLI.
 */
const dir = mkdtempSync(path.join(os.tmpdir(), 'cal-oc-bun-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function fake(name: string, body: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

/** A Bun-backed fake whose every start of the CLI's own (not its Bun) adds a line to `calls`. */
function bunBacked(name: string, database: string, calls: string): string {
  return fake(
    name,
    `if [ "$BUN_BE_BUN" = 1 ]; then
  if [ "$1" = --version ]; then echo 1.3.14; exit 0; fi
  if [ "$1" = -e ]; then printf '[{"file":"%s","sql":"%s"}]' "$3" "$4"; exit 0; fi
  exit 2
fi
echo "$*" >> ${calls}
if [ "$1" = --version ]; then echo 1.18.33; exit 0; fi
if [ "$1" = db ] && [ "$2" = path ]; then echo ${database}; exit 0; fi
exit 3`,
  );
}

const cli = (realPath: string) => ({ realPath, version: '1.18.33' });
const env = { PATH: '/usr/bin:/bin', HOME: dir };
const callsIn = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n') : []);

describe('bunQuery', () => {
  it("runs the query with the binary's Bun on the database `db path` names, never starting the CLI for its version", async () => {
    const calls = path.join(dir, 'calls-1');
    const exe = bunBacked('bun-backed', '/data/opencode/opencode.db', calls);
    expect(await bunQuery(cli(exe), env, 'select 1', null)).toEqual([{ file: '/data/opencode/opencode.db', sql: 'select 1' }]);
    expect(callsIn(calls)).toEqual(['db path']);
  });

  it('keeps what `db path` answered in a private folder, for the next cal process, while it names a file', async () => {
    const calls = path.join(dir, 'calls-2');
    const database = path.join(dir, 'kept.db');
    writeFileSync(database, '');
    const exe = bunBacked('kept', database, calls);
    const cacheDir = path.join(dir, 'cal-transcripts');
    mkdirSync(cacheDir, { mode: 0o700 });
    /** A new cal process: the module loaded afresh, its in-memory answers gone. */
    const inNewProcess = async () => {
      vi.resetModules();
      const fresh = await import('../../src/adapters/opencode/bun-sqlite.js');
      return fresh.bunQuery(cli(exe), env, 'select 2', cacheDir);
    };
    expect(await inNewProcess()).toEqual([{ file: database, sql: 'select 2' }]);
    expect(await inNewProcess()).toEqual([{ file: database, sql: 'select 2' }]);
    expect(callsIn(calls)).toEqual(['db path']);
    // The database gone (another store, a removed home): asked again.
    rmSync(database);
    await inNewProcess();
    expect(callsIn(calls)).toEqual(['db path', 'db path']);
    // A folder others can write to keeps nothing and is never read.
    const open = path.join(dir, 'open');
    mkdirSync(open, { mode: 0o777 });
    chmodSync(open, 0o777);
    writeFileSync(database, '');
    vi.resetModules();
    const fresh = await import('../../src/adapters/opencode/bun-sqlite.js');
    await fresh.bunQuery(cli(exe), env, 'select 3', open);
    expect(callsIn(calls)).toHaveLength(3);
    expect(readFileSync(calls, 'utf8')).not.toContain('--version');
  });

  it('is null for a binary that is not Bun-backed, and for a query that fails', async () => {
    const plain = fake('plain', 'if [ "$1" = --version ]; then echo 1.18.33; exit 0; fi\nif [ "$1" = -e ]; then echo "[]"; exit 0; fi\nexit 1');
    expect(await bunQuery(cli(plain), env, 'select 1', null)).toBeNull();
    // Its own version with more words, whatever BUN_BE_BUN says: not Bun either.
    const wordy = fake('wordy', 'if [ "$1" = --version ]; then echo "1.18.33 (linux x64)"; exit 0; fi\nif [ "$1" = -e ]; then echo "[]"; exit 0; fi\nexit 1');
    expect(await bunQuery(cli(wordy), env, 'select 1', null)).toBeNull();
    const failing = fake(
      'failing',
      'if [ "$BUN_BE_BUN" = 1 ]; then [ "$1" = --version ] && { echo 1.3.14; exit 0; }; echo "SQLITE_CANTOPEN" >&2; exit 1; fi\nif [ "$1" = --version ]; then echo 1.18.33; exit 0; fi\nif [ "$1" = db ]; then echo /nowhere/opencode.db; exit 0; fi\nexit 1',
    );
    expect(await bunQuery(cli(failing), env, 'select 1', null)).toBeNull();
  });
});
