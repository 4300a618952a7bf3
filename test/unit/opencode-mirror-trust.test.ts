import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syncMirror } from '../../src/adapters/opencode/store.js';
import { OPENCODE } from '../../src/adapters/opencode/flavour.js';
import type { PinnedCli } from '../../src/handles/schema.js';
import { scratchDir } from '../support/cal.js';
import { removeScratch } from '../support/scratch.js';

/**
 * cal's mirror of an OpenCode session lives in OpenCode's data folder, which the agent (and
 * anything else running as the user) can write. On 91258d3 its header's `executable` was run to
 * read the store, so writing that file ran any program at the next `cal continue`; and a FIFO put
 * in its place held cal for good. Now only the handle's pinned CLI runs, a header naming anything
 * else (or a variable outside the store's own) is refused, and a FIFO is refused at once.
 */
describe("OpenCode's mirror file is not trusted to say what cal runs", () => {
  let root: string;
  let cli: PinnedCli;
  let marker: string;
  let evil: string;
  const env = () => ({ HOME: root, XDG_DATA_HOME: path.join(root, 'data') });
  const sessionId = 'ses_TRUST1';

  beforeAll(async () => {
    root = await fs.realpath(await scratchDir('opencode-mirror'));
    // The pinned CLI: answers every query with no rows.
    const pinned = path.join(root, 'opencode');
    await fs.writeFile(pinned, "#!/bin/sh\necho '[]'\n", { mode: 0o755 });
    cli = { path: pinned, realPath: pinned, version: '1.18.33' };
    marker = path.join(root, 'ran');
    evil = path.join(root, 'evil');
    await fs.writeFile(evil, `#!/bin/sh\ntouch ${marker}\necho '[]'\n`, { mode: 0o755 });
    await fs.mkdir(path.join(root, 'mirrors'));
  });
  afterAll(async () => {
    await removeScratch(root);
  });

  async function mirror(name: string, header: unknown): Promise<string> {
    const file = path.join(root, 'mirrors', `${name}.jsonl`);
    await fs.writeFile(file, `${JSON.stringify(header)}\n`);
    return file;
  }

  it('a header naming another executable is refused, and that executable never runs', async () => {
    const file = await mirror('evil', { kind: 'opencode-mirror', sessionId, executable: evil, env: env(), mcpServers: [] });
    await expect(syncMirror(OPENCODE, file, cli)).rejects.toMatchObject({ kind: 'resume_unavailable' });
    expect(existsSync(marker)).toBe(false);
  });

  it('a header setting a variable outside the store\'s own (LD_PRELOAD, NODE_OPTIONS) is refused', async () => {
    for (const extra of [{ LD_PRELOAD: evil }, { NODE_OPTIONS: `--require ${evil}` }]) {
      const file = await mirror(`env-${Object.keys(extra)[0]}`, { kind: 'opencode-mirror', sessionId, executable: cli.realPath, env: { ...env(), ...extra }, mcpServers: [] });
      await expect(syncMirror(OPENCODE, file, cli)).rejects.toMatchObject({ kind: 'resume_unavailable' });
    }
  });

  it('a FIFO in place of the mirror is refused at once, not waited on', async () => {
    const file = path.join(root, 'mirrors', 'fifo.jsonl');
    execFileSync('mkfifo', [file]);
    const started = Date.now();
    await expect(syncMirror(OPENCODE, file, cli)).rejects.toMatchObject({ kind: 'resume_unavailable' });
    expect(Date.now() - started).toBeLessThan(2000);
  }, 10_000);

  it('a link in place of the mirror is not followed', async () => {
    const target = await mirror('target', { kind: 'opencode-mirror', sessionId, executable: cli.realPath, env: env(), mcpServers: [] });
    const link = path.join(root, 'mirrors', 'link.jsonl');
    await fs.symlink(target, link);
    await expect(syncMirror(OPENCODE, link, cli)).rejects.toMatchObject({ kind: 'resume_unavailable' });
  });

  it("a mirror naming the pinned CLI is read through it", async () => {
    const file = await mirror('good', { kind: 'opencode-mirror', sessionId, executable: cli.realPath, env: env(), mcpServers: [] });
    await expect(syncMirror(OPENCODE, file, cli)).resolves.toBeUndefined();
    expect(existsSync(marker)).toBe(false);
  });
});
