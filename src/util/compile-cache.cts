import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
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
 * A cache entry is named by the chunk's name, size and modification time (a rebuilt chunk gets
 * a new entry; V8 itself checks only the source length and its own version and flags), in a
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

function entryFor(dir: string, file: string): string | null {
  try {
    const st = statSync(file);
    return path.join(dir, `${path.basename(file)}-${st.size}-${Math.trunc(st.mtimeMs)}`);
  } catch {
    return null;
  }
}

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

function readEntry(entry: string | null): Buffer | undefined {
  if (entry === null) return undefined;
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
    for (const name of readdirSync(dir)) {
      const chunk = /^(.+)-(\d+)-(\d+)$/.exec(name);
      if (current.has(name) || !chunk) continue;
      if (entryFor(dir, path.join(chunks, chunk[1] as string)) !== path.join(dir, name)) rmSync(path.join(dir, name), { force: true });
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
    const cacheEntry = entryFor(dir, filename);
    const cachedData = readEntry(cacheEntry);
    // No import() runs in a chunk (the bundler turns cal's own into requires; the TUI's door is
    // tui/load.ts): a vm script's import() would need an experimental loader option.
    const script = new vm.Script(Module.wrap(content), { filename, ...(cachedData ? { cachedData } : {}) });
    if (cacheEntry !== null && (cachedData === undefined || script.cachedDataRejected)) compiledNow.push({ entry: cacheEntry, script });
    const run = script.runInThisContext({ displayErrors: true }) as (...args: unknown[]) => unknown;
    return run.call(this.exports, this.exports, createRequire(filename), this, filename, path.dirname(filename));
  };
  process.once('exit', () => {
    if (compiledNow.length > 0) writeEntries(dir, chunks, compiledNow);
  });
  return require(entry) as T;
}
