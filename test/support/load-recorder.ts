import fs from 'node:fs/promises';
import path from 'node:path';
import { repoRoot } from './clis.js';

/**
 * Records which files a cal run loads, for the tests of what a command loads: an ES module
 * `load` hook (module.register) and a CommonJS `Module._load` wrapper (the bundle's chunks are
 * CommonJS, which register hooks do not see on Node 20) each print `LOADED <file URL>` on stderr.
 * `unbundledBin` runs tsc's dist/cli.js as bin/cal.cjs runs the bundle: the bundle's chunks no
 * longer say which module is which, the unbundled graph (whose dynamic imports the bundle keeps
 * as chunk boundaries) shows it module by module.
 */
export interface LoadRecorder {
  /** Node options that install the recorder. */
  nodeArgs: string[];
  unbundledBin: string;
}

export async function writeLoadRecorder(dir: string): Promise<LoadRecorder> {
  await fs.writeFile(
    path.join(dir, 'hook.mjs'),
    "export async function load(url, context, next) { if (url.startsWith('file:')) process._rawDebug('LOADED ' + url); return next(url, context); }\n",
  );
  await fs.writeFile(path.join(dir, 'register.mjs'), "import { register } from 'node:module';\nregister('./hook.mjs', import.meta.url);\n");
  await fs.writeFile(
    path.join(dir, 'require-hook.cjs'),
    "const Module = require('node:module');\nconst load = Module._load;\nModule._load = function (request, parent, isMain) {\n  const loaded = load.apply(this, arguments);\n  try { const file = Module._resolveFilename(request, parent, isMain); if (file.startsWith('/')) process._rawDebug('LOADED file://' + file); } catch {}\n  return loaded;\n};\n",
  );
  const unbundledBin = path.join(dir, 'cal-unbundled.mjs');
  await fs.writeFile(unbundledBin, `import { main } from ${JSON.stringify(path.join(repoRoot, 'dist', 'cli.js'))};\nmain(process.argv).then((code) => { process.exitCode = code; });\n`);
  return { nodeArgs: ['--require', path.join(dir, 'require-hook.cjs'), '--import', path.join(dir, 'register.mjs')], unbundledBin };
}

/** A recorded run's stderr split into the files it loaded (paths) and the rest of what it said. */
export function loadedFiles(stderr: string): { files: string[]; rest: string } {
  const lines = stderr.split('\n');
  return {
    files: lines.filter((l) => l.startsWith('LOADED ')).map((l) => decodeURIComponent(new URL(l.slice(7)).pathname)),
    rest: lines.filter((l) => !l.startsWith('LOADED ')).join('\n'),
  };
}
