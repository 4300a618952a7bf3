#!/usr/bin/env node
// Bundles the command-line entry (dist/cli.js, tsc's output) into dist/bin/: a start of `cal`
// then reads a few chunks instead of resolving and linking ~250 modules (zod alone is ~95 of
// them), which is most of the time a `cal continue` spends before it reaches the CLI. Commands and
// adapters stay behind their dynamic imports, so each becomes its own chunk, loaded when used.
// The library entry (dist/index.js) is not bundled: programs import tsc's modules as they are.
//
// Ink and React stay outside (they are for the TUI only, and Ink's modules use top-level await):
// they are resolved from node_modules at run time, when `cal inspect` opens the TUI.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outside = /^(ink|react)(\/|$)/;
// util/package-root.js finds the package two folders above its chunk: dist/bin/ keeps that true.
const outDir = path.join(root, 'dist', 'bin');
rmSync(outDir, { recursive: true, force: true });

await build({
  input: { cli: path.join(root, 'dist', 'cli.js') },
  platform: 'node',
  external: (id) => outside.test(id),
  logLevel: 'warn',
  // Bundled CommonJS packages (write-file-atomic names its temp files from __filename) get the
  // ES module's own file and folder: an ES chunk has no CommonJS module variables.
  transform: { define: { __filename: 'import.meta.filename', __dirname: 'import.meta.dirname' } },
  output: {
    dir: outDir,
    format: 'esm',
    entryFileNames: '[name].js',
    chunkFileNames: '[name]-[hash].js',
    minify: true,
  },
});
