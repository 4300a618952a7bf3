#!/usr/bin/env node
// Thin entry into the bundled command line (dist/bin/, built by scripts/bundle.mjs), compiled
// through V8's code cache, so a start of `cal` loads a few chunks, only those its command uses.
import { fileURLToPath } from 'node:url';
import { requireWithCompileCache } from '../dist/util/compile-cache.js';

const { main } = requireWithCompileCache(fileURLToPath(new URL('../dist/bin/cli.cjs', import.meta.url)));

main(process.argv).then((code) => {
  process.exitCode = code;
});
