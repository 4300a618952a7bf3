import { realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, runCal, scratchDir } from '../support/cal.js';
import { calBin, repoRoot } from '../support/clis.js';
import { fakeCli } from '../support/structured-fakes.js';

/**
 * Issue 20, item 4: the README's chaining script, exactly as the README prints it, runs twice in
 * a row. It runs against the Cursor stand-in (test/fakes/cursor-agent.mjs, one process per turn)
 * so it takes seconds; `PROVIDER` is the script's own knob. `cal` and `cursor-agent` are put on
 * PATH as a user's install would.
 */
async function readmeScript(): Promise<string> {
  const readme = await fs.readFile(path.join(repoRoot, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('### Chaining turns from a shell script'));
  const m = /```sh\n([\s\S]*?)```/.exec(section);
  if (!m?.[1]) throw new Error('no sh block in the README chaining section');
  return m[1];
}

describe("the README's chaining script", () => {
  let root: string;
  let work: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    root = realpathSync(await scratchDir('readme-script'));
    work = path.join(root, 'work');
    const bin = path.join(root, 'bin');
    await Promise.all([fs.mkdir(work), fs.mkdir(bin), fs.mkdir(path.join(root, 'home'))]);
    await fs.writeFile(path.join(bin, 'cal'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(calBin)} "$@"\n`, { mode: 0o755 });
    await fs.symlink(fakeCli.cursor, path.join(bin, 'cursor-agent'));
    env = baseEnv({ HOME: path.join(root, 'home'), CAL_STATE_DIR: path.join(root, 'state'), CURSOR_API_KEY: 'test-key', PROVIDER: 'cursor' });
    env.PATH = `${bin}:${env.PATH}`;
    await fs.writeFile(path.join(root, 'chain.sh'), await readmeScript(), { mode: 0o755 });
  });

  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it('runs twice in a row, each run recalling its codewords, and leaves one nightly handle', async () => {
    for (const run of [1, 2]) {
      const res = await execa('/bin/sh', [path.join(root, 'chain.sh')], { cwd: work, env, extendEnv: false, reject: false });
      expect(res.exitCode, `run ${run}: ${res.stderr}`).toBe(0);
      expect(res.stdout.split('\n')).toEqual(['agent said: The codeword was TANGO.', 'The codeword was KIWI.']);
    }
    const list = await runCal(['inspect', '--json'], { env });
    expect(list.json.handles.map((h: { name: string | null }) => h.name)).toEqual(['nightly']);
  });

  it('a start whose first turn fails gives its name back (the handle stays under its id); cal remove exits 0, then 3', async () => {
    const failed = await runCal(['start', '--provider', 'cursor', '--name', 'once', '--cwd', work, '--json', 'Remember [[fake:fail]]'], { env });
    expect(failed.code, failed.stderr).toBe(10);
    const id = (failed.json.handle ?? failed.json.error.handle) as string;
    expect(id, failed.stdout).toMatch(/^[a-z0-9]+$/);
    const kept = await runCal(['inspect', id, '--json'], { env });
    expect(kept.json).toMatchObject({ id, name: null });
    expect(kept.json.events.map((e: { event: string }) => e.event)).toContain('name_released');
    const again = await runCal(['start', '--provider', 'cursor', '--name', 'once', '--cwd', work, 'Remember the codeword FIG.'], { env });
    expect(again.code, again.stderr).toBe(0);
    const removed = await runCal(['remove', 'once', '--json'], { env });
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.json).toMatchObject({ name: 'once', panesEnded: 0 });
    const gone = await runCal(['remove', 'once'], { env });
    expect([gone.code, gone.stderr.trim()]).toEqual([3, expect.stringMatching(/^cal: not_found: no handle once/)]);
  });
});
