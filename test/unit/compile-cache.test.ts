import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { calBin, repoRoot } from '../support/clis.js';

/**
 * The code cache bin/cal.cjs compiles the bundled chunks through (src/util/compile-cache.cts),
 * exercised on the built cal: what it writes where, that a second run reuses it, and that no
 * state of the cache (corrupt, unwritable, turned off) changes what cal does.
 */
const run = promisify(execFile);

describe('the compile cache of the bundled command line', () => {
  let dir: string;
  let cacheHome: string;

  beforeEach(async () => {
    if (!existsSync(path.join(repoRoot, 'dist', 'bin', 'cli.cjs'))) throw new Error('dist/bin/cli.cjs is missing: run npm run build first');
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'cal-compile-cache-'));
    cacheHome = path.join(dir, 'cache');
  });

  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  const cal = (args: string[], extra: Record<string, string> = {}) =>
    run(process.execPath, [calBin, '--state-dir', path.join(dir, 'state'), ...args], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, XDG_CACHE_HOME: cacheHome, ...extra },
    });

  /** Every cache entry: its name → its bytes. */
  async function entries(): Promise<Map<string, Buffer>> {
    const out = new Map<string, Buffer>();
    const root = path.join(cacheHome, 'cal', 'compile');
    if (!existsSync(root)) return out;
    for (const folder of await fs.readdir(root)) {
      for (const name of await fs.readdir(path.join(root, folder))) out.set(`${folder}/${name}`, await fs.readFile(path.join(root, folder, name)));
    }
    return out;
  }

  it('a first run writes one entry per chunk it compiled, under $XDG_CACHE_HOME/cal; the next run reuses them and writes nothing', async () => {
    expect((await cal(['--version'])).stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    const first = await entries();
    const names = [...first.keys()];
    expect(names.some((n) => n.endsWith('/cli.cjs.v8'))).toBe(true);
    expect(names.every((n) => n.startsWith(`v8-${process.versions.v8}-${process.arch}-`))).toBe(true);
    expect([...first.values()].every((b) => b.length > 0)).toBe(true);
    const inodes = async () => Promise.all([...first.keys()].map(async (n) => (await fs.stat(path.join(cacheHome, 'cal', 'compile', n))).ino));
    const before = await inodes();
    await cal(['--version']);
    // Accepted entries are not written again: a rejected one would be, by a rename that gives it
    // a new inode even when its bytes come out the same.
    expect(await entries()).toEqual(first);
    expect(await inodes()).toEqual(before);
    // A command that needs more chunks adds theirs and keeps the others.
    await cal(['inspect', '--json']);
    const more = await entries();
    expect(more.size).toBeGreaterThan(first.size);
    for (const [name, bytes] of first) expect(more.get(name)).toEqual(bytes);
  });

  it('a corrupt entry is rejected and replaced; the run itself is unchanged', async () => {
    await cal(['--version']);
    const [name] = [...(await entries()).keys()].filter((n) => n.endsWith('/cli.cjs.v8'));
    const file = path.join(cacheHome, 'cal', 'compile', name as string);
    await fs.writeFile(file, Buffer.from('not V8 code at all'));
    expect((await cal(['--version'])).stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect((await fs.readFile(file)).toString()).not.toBe('not V8 code at all');
  });

  it('entries of chunks that are gone (an earlier build), or of an older naming, are removed when new ones are written', async () => {
    await cal(['--version']);
    const [folder] = [...(await entries()).keys()].map((n) => n.split('/')[0]);
    const stale = ['common-OLDHASH1.cjs-1234-5678', 'common-OLDHASH1.cjs.v8', 'cli.cjs-0123456789abcdef'].map((n) => path.join(cacheHome, 'cal', 'compile', folder as string, n));
    for (const file of stale) await fs.writeFile(file, 'old');
    await cal(['inspect', '--json']);
    for (const file of stale) expect(existsSync(file), file).toBe(false);
  });

  it('a cache folder others can write, or an entry that is a symlink, is not read (the entry is code cal runs)', async () => {
    await cal(['--version']);
    const [name] = [...(await entries()).keys()].filter((n) => n.endsWith('/cli.cjs.v8'));
    const folder = path.join(cacheHome, 'cal', 'compile', (name as string).split('/')[0] as string);
    const entry = path.join(cacheHome, 'cal', 'compile', name as string);
    // A planted link in an entry's place: replaced by a file of cal's own, its target untouched.
    const target = path.join(dir, 'elsewhere');
    await fs.writeFile(target, 'not for cal');
    await fs.rm(entry);
    await fs.symlink(target, entry);
    expect((await cal(['--version'])).stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect((await fs.lstat(entry)).isSymbolicLink()).toBe(false);
    expect(await fs.readFile(target, 'utf8')).toBe('not for cal');
    // A folder group and others can write: neither read nor written.
    await fs.chmod(folder, 0o777);
    const before = await entries();
    await fs.rm(entry);
    expect((await cal(['--version'])).stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(existsSync(entry)).toBe(false);
    expect((await entries()).size).toBe(before.size - 1);
  });

  it('an unwritable cache and CAL_COMPILE_CACHE=0 leave cal working, and the latter writes nothing', async () => {
    await fs.writeFile(cacheHome, 'a file where the cache folder would be');
    expect((await cal(['inspect', '--json'])).stdout).toContain('"handles":[]');
    await fs.rm(cacheHome);
    expect((await cal(['inspect', '--json'], { CAL_COMPILE_CACHE: '0' })).stdout).toContain('"handles":[]');
    expect(existsSync(cacheHome)).toBe(false);
  });

  it('a chunk whose text changed under the same name, size and time is compiled afresh, never run from the old entry (issue 40, item 2)', async () => {
    const chunks = path.join(dir, 'install', 'bin');
    await fs.mkdir(chunks, { recursive: true });
    const chunk = path.join(chunks, 'early.cjs');
    const loader = `process.stdout.write(String(require(${JSON.stringify(path.join(repoRoot, 'dist', 'util', 'compile-cache.cjs'))}).requireWithCompileCache(${JSON.stringify(chunk)})))`;
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, XDG_CACHE_HOME: cacheHome };
    const load = async () => (await run(process.execPath, ['-e', loader], { env })).stdout;
    const when = new Date('2026-01-01T00:00:00Z');
    // Same length, same name, same mtime; the first requires a base chunk that an upgrade renamed.
    const versions = [`module.exports = require('./base-AAAA.cjs');`, `module.exports = require('./base-BBBB.cjs');`];
    await fs.writeFile(path.join(chunks, 'base-AAAA.cjs'), `module.exports = 'old';`);
    await fs.writeFile(chunk, versions[0] as string);
    await fs.utimes(chunk, when, when);
    expect(await load()).toBe('old');
    expect(await load()).toBe('old');
    await fs.rm(path.join(chunks, 'base-AAAA.cjs'));
    await fs.writeFile(path.join(chunks, 'base-BBBB.cjs'), `module.exports = 'new';`);
    await fs.writeFile(chunk, versions[1] as string);
    await fs.utimes(chunk, when, when);
    expect(await load()).toBe('new');
    // Beyond the issue: the old text back again (a downgrade) runs the old text, from its own entry or afresh.
    await fs.writeFile(path.join(chunks, 'base-AAAA.cjs'), `module.exports = 'old';`);
    await fs.writeFile(chunk, versions[0] as string);
    await fs.utimes(chunk, when, when);
    expect(await load()).toBe('old');
    const names = [...(await entries()).keys()].filter((n) => n.endsWith('/early.cjs.v8'));
    expect(names).toHaveLength(1);
  });
});
