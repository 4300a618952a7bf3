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
 * A cache entry holds the chunk's source beside V8's data, and is used only for a chunk whose
 * bytes are those (V8 itself checks only the source length and its own version and flags, so an
 * entry for other text would run that text's code; an upgrade can keep a chunk's name, size and
 * time). Comparing the bytes is a memcmp, where hashing the source in JavaScript took 3-4 ms of
 * every start (a fresh process runs the loop unoptimized). Entries are named by chunk, in a
 * folder per V8 version, architecture and installed cal (its chunks' folder); entries whose chunk
 * is gone (an earlier build) are removed when new ones are written. A cache entry is code cal
 * runs, so the cache is used only as the state directory is: a folder of this user's, 0700, not
 * a symlink, and entries that are this user's plain files (never followed through a link). Anything that goes wrong here (no home, a read-only
 * cache, a rejected entry) only means the chunk is compiled as without a cache. CAL_COMPILE_CACHE=0
 * turns it off.
 */

interface CompiledChunk {
  entry: string;
  source: Buffer;
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

/** A chunk's entry: `<chunk name>.v8`. */
function entryFor(dir: string, file: string): string {
  return path.join(dir, `${path.basename(file)}.v8`);
}

/** An entry's name: the chunk it is for. */
const ENTRY_NAME = /^(.+)\.v8$/;

/** An entry: this magic, the source's length (uint32 LE), the source, then V8's cached data. */
const ENTRY_MAGIC = Buffer.from('calv8src');
const HEADER_BYTES = ENTRY_MAGIC.length + 4;

function entryBytes(source: Buffer, cachedData: Buffer): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  ENTRY_MAGIC.copy(header);
  header.writeUInt32LE(source.length, ENTRY_MAGIC.length);
  return Buffer.concat([header, source, cachedData]);
}

/** The cached data in an entry, if the entry was written for exactly these source bytes. */
function cachedDataFor(entry: Buffer | undefined, source: Buffer): Buffer | undefined {
  if (!entry || entry.length < HEADER_BYTES || !entry.subarray(0, ENTRY_MAGIC.length).equals(ENTRY_MAGIC)) return undefined;
  const end = HEADER_BYTES + entry.readUInt32LE(ENTRY_MAGIC.length);
  if (end >= entry.length || !entry.subarray(HEADER_BYTES, end).equals(source)) return undefined;
  return entry.subarray(end);
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
    for (const name of readdirSync(dir)) {
      if (current.has(name) || name.endsWith('.tmp')) continue;
      const entry = ENTRY_NAME.exec(name);
      // Gone: an entry of an older naming (name, size, time; a hash of the source) or of a chunk
      // no longer installed.
      if (!entry || !existsSync(path.join(chunks, entry[1] as string))) rmSync(path.join(dir, name), { force: true });
    }
  } catch {
    return;
  }
  for (const { entry, source, script } of compiled) {
    // Another cal may write the same entry at the same time: each writes its own file, then renames.
    const tmp = `${entry}.${process.pid}.tmp`;
    try {
      writeFileSync(tmp, entryBytes(source, script.createCachedData()), { mode: 0o600 });
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
  // The loader of .js and .cjs files (Module._extensions, as v8-compile-cache hooks Node's
  // loading): a chunk is read here as bytes, so that one read is both what is compared with the
  // entry and what runs.
  const extensions = (Module as unknown as { _extensions: Record<string, (module: NodeJS.Module, filename: string) => void> })._extensions;
  const loadJs = extensions['.js'] as (module: NodeJS.Module, filename: string) => void;
  extensions['.js'] = function (this: unknown, module: NodeJS.Module, filename: string) {
    if (!filename.startsWith(chunks)) return loadJs.call(this, module, filename);
    const source = readFileSync(filename);
    const cacheEntry = entryFor(dir, filename);
    const cachedData = cachedDataFor(readEntry(cacheEntry), source);
    // No import() runs in a chunk (the bundler turns cal's own into requires; the TUI's door is
    // tui/load.ts): a vm script's import() would need an experimental loader option.
    const script = new vm.Script(Module.wrap(source.toString('utf8')), { filename, ...(cachedData ? { cachedData } : {}) });
    if (cachedData === undefined || script.cachedDataRejected) compiledNow.push({ entry: cacheEntry, source, script });
    const run = script.runInThisContext({ displayErrors: true }) as (...args: unknown[]) => unknown;
    run.call(module.exports, module.exports, createRequire(filename), module, filename, path.dirname(filename));
  };
  process.once('exit', () => {
    if (compiledNow.length > 0) writeEntries(dir, chunks, compiledNow);
  });
  return require(entry) as T;
}
