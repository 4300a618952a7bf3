import { closeSync, constants, existsSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import vm from 'node:vm';

/**
 * V8's code cache for the bundled command line (dist/bin/*.cjs), which Node 20 lacks built in
 * (`module.enableCompileCache` arrived in Node 22.1). Compiling the chunks a command needs is a
 * fixed cost of every `cal` run; with the code V8 produced for them on an earlier run, it is
 * mostly skipped. The cache is written after the command ran, so it holds the functions that
 * were really compiled, not only the top level.
 *
 * A cache entry is named by the chunk's name and a hash of its source (a chunk whose text changed
 * gets a new entry, whatever its name, size and time; V8 itself checks only the source length
 * and its own version and flags, so an entry for other text would run that text's code), in a
 * folder per V8 version, architecture and installed cal (its chunks' folder); entries whose chunk
 * is gone (an earlier build) are removed when new ones are written. A cache entry is code cal
 * runs, so the cache is used only as the state directory is: a folder of this user's, 0700, not
 * a symlink, and entries that are this user's plain files (never followed through a link). Anything that goes wrong here (no home, a read-only
 * cache, a rejected entry) only means the chunk is compiled as without a cache. CAL_COMPILE_CACHE=0
 * turns it off.
 */

interface CompiledChunk {
  entry: string;
  script: vm.Script;
}

/** Where cal keeps caches: `$XDG_CACHE_HOME/cal`, ~/Library/Caches/cal on macOS, %LOCALAPPDATA%\cal\Cache on Windows. */
export function cacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  const home = os.homedir();
  if (process.platform === 'darwin') return path.join(home, 'Library', 'Caches', 'cal');
  if (process.platform === 'win32') return path.join(env.LOCALAPPDATA || path.join(home, 'AppData', 'Local'), 'cal', 'Cache');
  return path.join(env.XDG_CACHE_HOME || path.join(home, '.cache'), 'cal');
}

/** FNV-1a of a string, in hex: a short, stable folder name for a path (node:crypto costs a start-up more). */
function shortHash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

export function compileCacheDir(chunks: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(cacheRoot(env), 'compile', `v8-${process.versions.v8}-${process.arch}-${shortHash(chunks)}`);
}

/**
 * A 64-bit hash of a chunk's source, in hex: two FNV-1a passes with different offsets, so an entry
 * is named by what the chunk says, not by its name, size or time (V8 checks only the source's
 * length, and an upgrade can keep a chunk's name, size and time while its text changes: the cache
 * would then run the old code).
 */
function contentHash(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193) >>> 0;
    b = Math.imul(b ^ c, 0x01000193) >>> 0;
    b = (b ^ (b >>> 15)) >>> 0;
  }
  return a.toString(16).padStart(8, '0') + b.toString(16).padStart(8, '0');
}

/** The entry of a chunk with this source: `<chunk name>-<hash of its source>`. */
function entryFor(dir: string, file: string, content: string): string {
  return path.join(dir, `${path.basename(file)}-${contentHash(content)}`);
}

/** An entry's name: the chunk it is for and the hash of that chunk's source. */
const ENTRY_NAME = /^(.+)-([0-9a-f]{16})$/;

/** Whether a path is this user's own: not a symlink, not writable by group or others. */
function ownedPrivately(st: { uid: number; mode: number }): boolean {
  const uid = process.getuid?.();
  return (uid === undefined || st.uid === uid) && (st.mode & 0o022) === 0;
}

/** The folder holds a cache cal may use: missing (it will be created 0700) or this user's, 0700. */
function usableDir(dir: string): boolean {
  try {
    const st = lstatSync(dir);
    return st.isDirectory() && ownedPrivately(st) && (st.mode & 0o077) === 0;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

function readEntry(entry: string): Buffer | undefined {
  let fd: number | null = null;
  try {
    fd = openSync(entry, constants.O_RDONLY | constants.O_NOFOLLOW);
    const st = fstatSync(fd);
    if (!st.isFile() || !ownedPrivately(st)) return undefined;
    return readFileSync(fd);
  } catch {
    return undefined;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

function writeEntries(dir: string, chunks: string, compiled: CompiledChunk[]): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const current = new Set(compiled.map((c) => path.basename(c.entry)));
    const recompiled = new Set(compiled.map((c) => ENTRY_NAME.exec(path.basename(c.entry))?.[1]));
    for (const name of readdirSync(dir)) {
      if (current.has(name) || name.endsWith('.tmp')) continue;
      const entry = ENTRY_NAME.exec(name);
      // Gone: an entry of the older naming (name, size, time), of a chunk no longer installed, or
      // of a chunk compiled now from other source (the entry holds its earlier text's code).
      const stale = !entry || recompiled.has(entry[1]) || !existsSync(path.join(chunks, entry[1] as string));
      if (stale) rmSync(path.join(dir, name), { force: true });
    }
  } catch {
    return;
  }
  for (const { entry, script } of compiled) {
    // Another cal may write the same entry at the same time: each writes its own file, then renames.
    const tmp = `${entry}.${process.pid}.tmp`;
    try {
      writeFileSync(tmp, script.createCachedData(), { mode: 0o600 });
      renameSync(tmp, entry);
    } catch {
      // A cache that cannot be written changes nothing but the next start's speed.
    }
  }
}

const hookedFolders = new Set<string>();

/**
 * Requires `entry` (a CommonJS chunk of dist/bin/) with every chunk under its folder compiled
 * through the code cache; other modules load as Node loads them.
 */
export function requireWithCompileCache<T>(entry: string, env: NodeJS.ProcessEnv = process.env): T {
  const require = createRequire(entry);
  const chunks = path.dirname(entry) + path.sep;
  // A second entry of the same folder (bin/cal.cjs requires two) goes through the hook already set.
  if (hookedFolders.has(chunks)) return require(entry) as T;
  hookedFolders.add(chunks);
  const dir = compileCacheDir(chunks, env);
  if (env.CAL_COMPILE_CACHE === '0' || !usableDir(dir)) return require(entry) as T;
  const compiledNow: CompiledChunk[] = [];
  // Module.prototype._compile is what Node calls with a CommonJS file's source: the one place a
  // loader can hand V8 cached data (v8-compile-cache hooks the same place).
  const proto = Module.prototype as unknown as { _compile(content: string, filename: string): unknown };
  const compile = proto._compile;
  proto._compile = function (this: NodeJS.Module, content: string, filename: string) {
    if (!filename.startsWith(chunks)) return compile.call(this, content, filename);
    const cacheEntry = entryFor(dir, filename, content);
    const cachedData = readEntry(cacheEntry);
    // No import() runs in a chunk (the bundler turns cal's own into requires; the TUI's door is
    // tui/load.ts): a vm script's import() would need an experimental loader option.
    const script = new vm.Script(Module.wrap(content), { filename, ...(cachedData ? { cachedData } : {}) });
    if (cachedData === undefined || script.cachedDataRejected) compiledNow.push({ entry: cacheEntry, script });
    const run = script.runInThisContext({ displayErrors: true }) as (...args: unknown[]) => unknown;
    return run.call(this.exports, this.exports, createRequire(filename), this, filename, path.dirname(filename));
  };
  process.once('exit', () => {
    if (compiledNow.length > 0) writeEntries(dir, chunks, compiledNow);
  });
  return require(entry) as T;
}
