#!/usr/bin/env node
// Thin entry: everything lives in dist/cli.js so `cal --version` loads as little as possible.
import { main } from '../dist/cli.js';

main(process.argv).then((code) => {
  process.exitCode = code;
});
