import { realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, runCal, scratchDir } from '../support/cal.js';
import { fakeCli } from '../support/structured-fakes.js';

/**
 * Issue 20, item 9, plans: a plan on a handle that does not exist fails (exit 10, run `failed`)
 * instead of staying `running`; a command phase runs in the session's working directory (as
 * docs/plans.md says), not the plan's folder. The built cal and the Cursor stand-in.
 */
describe('plans on a missing handle, and command phases in the session folder', () => {
  let root: string;
  let env: Record<string, string>;
  const cal = (args: string[]) => runCal(args, { env, cwd: root });
  beforeAll(async () => {
    root = realpathSync(await scratchDir('plans-ux'));
    await Promise.all(['home', 'work', 'plans'].map((d) => fs.mkdir(path.join(root, d))));
    env = baseEnv({ HOME: path.join(root, 'home'), CAL_STATE_DIR: path.join(root, 'state'), CURSOR_API_KEY: 'k' });
  });
  afterAll(async () => fs.rm(root, { recursive: true, force: true }));

  it('a plan on a missing handle: exit 10, the run and its phase failed with not_found, no event log for the name', async () => {
    const plan = path.join(root, 'plans', 'missing.yaml');
    await fs.writeFile(plan, 'version: 1\nsession: { handle: nosuch }\nphases:\n  - id: a\n    message: hi\n');
    const res = await cal(['run', plan, '--json']);
    expect(res.code, res.stderr).toBe(10);
    expect(res.json).toMatchObject({ status: 'failed', phases: [{ id: 'a', status: 'failed', error: expect.stringMatching(/^not_found: no handle nosuch/) }] });
    const runs = await fs.readdir(path.join(root, 'state', 'runs'));
    const stored = JSON.parse(await fs.readFile(path.join(root, 'state', 'runs', runs[0]!), 'utf8'));
    expect(stored.status).toBe('failed');
    expect(await fs.readdir(path.join(root, 'state', 'handles'))).toEqual([]);
    // Nothing left for recover to resume.
    const recover = await cal(['recover', '--json']);
    expect(recover.json.runs).toEqual([]);
  });

  it("a command phase runs in the session's working directory", async () => {
    const work = path.join(root, 'work');
    const start = await cal(['start', '--provider', 'cursor', '--cli-path', fakeCli.cursor, '--cwd', work, '--name', 'planned', 'hi']);
    expect(start.code, start.stderr).toBe(0);
    const plan = path.join(root, 'plans', 'cwd.yaml');
    await fs.writeFile(plan, 'version: 1\nsession: { handle: planned }\nphases:\n  - id: where\n    command: ["sh", "-c", "pwd > where.txt"]\n');
    const res = await cal(['run', plan]);
    expect(res.code, res.stderr).toBe(0);
    expect((await fs.readFile(path.join(work, 'where.txt'), 'utf8')).trim()).toBe(work);
    await expect(fs.stat(path.join(root, 'plans', 'where.txt'))).rejects.toThrow();
  });

  it('recover says which turn it is on and what it does with it, on stderr (issue 20, item 9)', async () => {
    const inspect = await cal(['inspect', 'planned', '--json']);
    const id = inspect.json.id as string;
    const dir = path.join(root, 'state', 'turns', id);
    const [first] = (await fs.readdir(dir)).sort();
    const record = JSON.parse(await fs.readFile(path.join(dir, first!), 'utf8'));
    const orphan = { ...record, id: 'orphan01', seq: 9, status: 'sending', answer: null, sentAt: null, ownerPid: 999_999_9, ownerStartTime: null };
    await fs.writeFile(path.join(dir, 't0009-orphan01.json'), JSON.stringify(orphan), { mode: 0o600 });
    const res = await cal(['recover']);
    expect(res.stderr).toMatch(new RegExp(`^recovering ${id} orphan01: \\S`, 'm'));
    expect(res.stdout).toContain(`${id}\torphan01\tsending -> `);
  });
});
