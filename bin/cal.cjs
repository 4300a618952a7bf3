#!/usr/bin/env node
// Thin entry into the bundled command line (dist/bin/, built by scripts/bundle.mjs), compiled
// through V8's code cache, so a start of `cal` loads a few chunks, only those its command uses.
// CommonJS on purpose: an ES module entry starts Node's ES module loader first (~10 ms here),
// which the bundle does not need.
'use strict';
const path = require('node:path');
const { requireWithCompileCache } = require('../dist/util/compile-cache.cjs');

const { main } = requireWithCompileCache(path.join(__dirname, '..', 'dist', 'bin', 'cli.cjs'));

main(process.argv).then((code) => {
  process.exitCode = code;
});
