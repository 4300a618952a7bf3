#!/usr/bin/env node
// Thin entry into the bundled command line (dist/bin/, built by scripts/bundle.mjs), so a start of
// `cal` loads a few chunks, and only the ones its command uses.
import { main } from '../dist/bin/cli.js';

main(process.argv).then((code) => {
  process.exitCode = code;
});
