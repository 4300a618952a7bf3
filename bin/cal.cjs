#!/usr/bin/env node
// Thin entry into the bundled command line (dist/bin/, built by scripts/bundle.mjs), compiled
// through V8's code cache, so a start of `cal` loads a few chunks, only those its command uses.
// CommonJS on purpose: an ES module entry starts Node's ES module loader first (~10 ms here),
// which the bundle does not need.
'use strict';
const path = require('node:path');
const { requireWithCompileCache } = require('../dist/util/compile-cache.cjs');

const chunks = path.join(__dirname, '..', 'dist', 'bin');
// Before cal's own modules load: `cal continue <handle>` may start the CLI of its turn now, where
// the handle's adapter recorded how (src/commands/early-start.ts). The turn takes it only if it
// would launch the very same; otherwise it is killed unsent.
requireWithCompileCache(path.join(chunks, 'early.cjs')).startEarly(process.argv, process.env);
const { main } = requireWithCompileCache(path.join(chunks, 'cli.cjs'));

main(process.argv).then((code) => {
  process.exitCode = code;
  // The command is done (every command returns only when its work has ended). Exiting now skips
  // what a natural exit does first, freeing the whole heap (2-4 ms of every call, measured), once
  // stdout and stderr hold nothing unwritten (they are synchronous on Linux; a pipe on macOS may
  // not be, and its output must not be cut). One turn of the event loop comes first, so handles
  // the command closed in its last callbacks are released: libuv removes an fs.watch closed in
  // its own callback only after that callback returns, and a watch left for the kernel to tear
  // down at exit made the exit about 10 ms slower (measured with strace: no inotify_rm_watch).
  setImmediate(() => {
    const pending = [process.stdout, process.stderr].filter((s) => s.writableLength > 0);
    if (pending.length === 0) process.exit(code);
    // A stream whose reader went away (EPIPE) never drains: its close counts as done as well.
    let left = pending.length;
    for (const s of pending) {
      let done = false;
      const one = () => !done && (done = true) && --left === 0 && process.exit(code);
      s.once('drain', one);
      s.once('close', one);
    }
  });
});
