import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bunQuery } from '../../src/adapters/opencode/bun-sqlite.js';

/**
 * OpenCode's store read through the binary's own Bun (`BUN_BE_BUN=1`): only when the binary is
 * Bun-backed (its `--version` changes under BUN_BE_BUN), at the database `opencode db path` names;
 * anything else is null, so the caller asks `opencode db`. Fake executables stand in for the CLI.
 */
const dir = mkdtempSync(path.join(os.tmpdir(), 'cal-oc-bun-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function fake(name: string, body: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

describe('bunQuery', () => {
  it("runs the query with the binary's Bun on the database `db path` names", async () => {
    const exe = fake(
      'bun-backed',
      `if [ "$BUN_BE_BUN" = 1 ]; then
  if [ "$1" = --version ]; then echo 1.3.14; exit 0; fi
  if [ "$1" = -e ]; then printf '[{"file":"%s","sql":"%s"}]' "$3" "$4"; exit 0; fi
  exit 2
fi
if [ "$1" = --version ]; then echo 1.18.33; exit 0; fi
if [ "$1" = db ] && [ "$2" = path ]; then echo /data/opencode/opencode.db; exit 0; fi
exit 3`,
    );
    expect(await bunQuery(exe, { PATH: '/usr/bin:/bin', HOME: dir }, 'select 1')).toEqual([{ file: '/data/opencode/opencode.db', sql: 'select 1' }]);
  });

  it('is null for a binary that is not Bun-backed, and for a query that fails', async () => {
    const plain = fake('plain', 'if [ "$1" = --version ]; then echo 1.18.33; exit 0; fi\nif [ "$1" = -e ]; then echo "[]"; exit 0; fi\nexit 1');
    expect(await bunQuery(plain, { PATH: '/usr/bin:/bin', HOME: dir }, 'select 1')).toBeNull();
    const failing = fake(
      'failing',
      'if [ "$BUN_BE_BUN" = 1 ]; then [ "$1" = --version ] && { echo 1.3.14; exit 0; }; echo "SQLITE_CANTOPEN" >&2; exit 1; fi\nif [ "$1" = --version ]; then echo 1.18.33; exit 0; fi\nif [ "$1" = db ]; then echo /nowhere/opencode.db; exit 0; fi\nexit 1',
    );
    expect(await bunQuery(failing, { PATH: '/usr/bin:/bin', HOME: dir }, 'select 1')).toBeNull();
  });
});
