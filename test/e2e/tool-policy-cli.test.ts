import { realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, runCal, scratchDir } from '../support/cal.js';
import { fakeCli, readLog } from '../support/structured-fakes.js';

/** Issue 20, item 7, through the built cal and the Cursor stand-in: the flag, the handle, the CLI's argv, the stale check. */
describe('cal start/continue --tool-policy', () => {
  let root: string;
  let env: Record<string, string>;
  let log: string;
  beforeAll(async () => {
    root = realpathSync(await scratchDir('tool-policy-cli'));
    log = path.join(root, 'cursor.log');
    await fs.mkdir(path.join(root, 'home'));
    env = baseEnv({ HOME: path.join(root, 'home'), CAL_STATE_DIR: path.join(root, 'state'), CURSOR_API_KEY: 'k', FAKE_CURSOR_LOG: log });
  });
  afterAll(async () => fs.rm(root, { recursive: true, force: true }));

  it('read-only reaches Cursor as --mode ask, is recorded, and another policy on continue is stale_handle (exit 6) naming toolPolicy', async () => {
    const start = await runCal(['start', '--provider', 'cursor', '--cli-path', fakeCli.cursor, '--cwd', root, '--tool-policy', 'read-only', '--json', 'Remember the codeword TANGO.'], { env });
    expect(start.code, start.stderr).toBe(0);
    const turns = (await readLog(log)).filter((r) => r.argv.includes('-p'));
    expect(turns.at(-1).argv.join(' ')).toContain('--mode ask');
    const inspect = await runCal(['inspect', start.json.handle, '--json'], { env });
    expect(inspect.json.config.toolPolicy).toBe('read-only');
    const stale = await runCal(['continue', start.json.handle, '--tool-policy', 'bypass', '--json', 'What was the codeword?'], { env });
    expect([stale.code, stale.json.error]).toEqual([6, expect.objectContaining({ kind: 'stale_handle', field: 'toolPolicy', expected: 'read-only', actual: 'bypass' })]);
  });

  it('a policy a provider has no equivalent for, or an unknown one, is usage (exit 2) and saves no handle', async () => {
    const none = await runCal(['start', '--provider', 'cursor', '--cli-path', fakeCli.cursor, '--cwd', root, '--tool-policy', 'accept-edits', 'hi'], { env });
    expect([none.code, none.stderr.trim()]).toEqual([2, 'cal: usage: cursor has no equivalent of --tool-policy accept-edits; it takes: default, read-only, bypass']);
    const api = await runCal(['start', '--provider', 'anthropic', '--tool-policy', 'read-only', 'hi'], { env: { ...env, ANTHROPIC_API_KEY: 'x' } });
    expect([api.code, api.stderr]).toEqual([2, expect.stringContaining('an API session runs no tools')]);
    const unknown = await runCal(['start', '--provider', 'cursor', '--tool-policy', 'yolo', 'hi'], { env });
    expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringContaining("argument 'yolo' is invalid")]);
    const list = await runCal(['inspect', '--json'], { env });
    expect(list.json.handles).toHaveLength(1);
  });

  it('kill-tmux on a structured session is non_applicable (8), as on an API session (issue 20, item 8)', async () => {
    const start = await runCal(['start', '--provider', 'cursor', '--cli-path', fakeCli.cursor, '--cwd', root, '--json', 'hi'], { env });
    expect(start.code, start.stderr).toBe(0);
    const kill = await runCal(['kill-tmux', start.json.handle, '--json'], { env });
    expect([kill.code, kill.json.error.kind]).toEqual([8, 'non_applicable']);
  });
});
