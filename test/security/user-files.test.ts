import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readUserFileSync } from '../../src/util/user-file.js';
import { CalError } from '../../src/errors.js';
import { baseEnv, runCal, scratchDir } from '../support/cal.js';
import { removeScratch } from '../support/scratch.js';

/**
 * Issue 40, item 7: every file cal reads from a path the user gave is a regular file of bounded
 * size, or refused at once with `usage` (exit 2): /dev/zero grew cal to 2 GB, and a FIFO with no
 * writer hung it with no timeout applied.
 */
describe('files read from user paths are bounded regular files', () => {
  let root: string;
  let fifo: string;
  let folder: string;
  let big: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    root = await scratchDir('sec-userfiles');
    fifo = path.join(root, 'fifo');
    execFileSync('mkfifo', [fifo]);
    folder = path.join(root, 'folder');
    mkdirSync(folder);
    big = path.join(root, 'big.json');
    writeFileSync(big, `{"mcpServers": {}, "pad": "${'x'.repeat(5 << 20)}"}`);
    env = baseEnv({ HOME: root, PATH: '/usr/bin:/bin' });
  });
  afterAll(async () => removeScratch(root));

  const state = () => path.join(root, 'state');
  const bad = () => ['/dev/zero', fifo, folder, big, '/dev/null'];

  it.each([
    ['start --mcp-config', (f: string) => ['start', '--provider', 'claude-code', '--cwd', root, '--mcp-config', f, 'hi']],
    ['start --system-prompt-file', (f: string) => ['start', '--provider', 'claude-code', '--cwd', root, '--system-prompt-file', f, 'hi']],
    ['run <plan>', (f: string) => ['run', f]],
  ])('%s: /dev/zero, a FIFO without writer, a folder, a 5 MB file, a device: usage at once, nothing recorded', async (_label, args) => {
    for (const file of bad()) {
      const started = Date.now();
      const run = await runCal(['--state-dir', state(), ...args(file)], { env, timeoutMs: 8000 });
      expect(run.code, `${file}: ${run.stderr}`).toBe(2);
      expect(run.stderr).toMatch(/^cal: usage: /m);
      expect(Date.now() - started).toBeLessThan(6000);
    }
    const handles = path.join(state(), 'handles');
    expect(readdirSync(handles, { withFileTypes: true }).filter((e) => e.name.endsWith('.json'))).toEqual([]);
  });

  it('the reader stops at its bound even when the size said otherwise (/proc files say 0)', () => {
    expect(() => readUserFileSync('/dev/zero', 'x', 1024)).toThrow(CalError);
    expect(readUserFileSync('/proc/self/status', 'x', 1 << 20)).toMatch(/^Name:/);
    expect(() => readUserFileSync('/proc/self/status', 'x', 16)).toThrow(/over the 16-byte limit/);
  });
});
