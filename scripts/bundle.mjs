#!/usr/bin/env node
// Bundles the command-line entry (dist/cli.js, tsc's output) into CommonJS chunks in dist/bin/:
// a start of `cal` then reads a few chunks instead of resolving and linking ~250 modules (zod
// alone was ~95 of them), and bin/cal.cjs compiles them through V8's code cache
// (src/util/compile-cache.cts), which Node 20 offers to CommonJS only. Commands and adapters stay
// behind their dynamic imports, so each becomes its own chunk, loaded when used. The library
// entry (dist/index.js) is not bundled: programs import tsc's modules as they are.
//
// The TUI (Ink and React, whose modules use top-level await) stays outside: commands/inspect.ts
// requires tsc's dist/tui/load.js by a path computed at run time, so the bundler never sees it.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// Never reached from the bundle (the TUI is loaded by path). Should a module import them anyway,
// they stay imports of node_modules: Ink cannot be turned into CommonJS (top-level await).
const outside = /^(ink|react)(\/|$)/;
// util/package-root.js finds the package two folders above its chunk: dist/bin/ keeps that true.
const outDir = path.join(root, 'dist', 'bin');
rmSync(outDir, { recursive: true, force: true });

await build({
  input: { cli: path.join(root, 'dist', 'cli.js') },
  platform: 'node',
  external: (id) => outside.test(id),
  logLevel: 'warn',
  output: {
    dir: outDir,
    format: 'cjs',
    entryFileNames: '[name].cjs',
    chunkFileNames: '[name]-[hash].cjs',
    minify: true,
  },
});
