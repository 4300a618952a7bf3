import { defineConfig } from 'vitest/config';
import { DurationSequencer } from './test/support/duration-sequencer.js';

// End-to-end tests drive real CLI binaries in real tmux; they are slow and share two cores,
// so files run with limited parallelism and generous timeouts.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    maxWorkers: 2,
    pool: 'forks',
    // Longest files first (a clean clone has no vitest cache to order them by).
    sequence: { sequencer: DurationSequencer },
    // Removes the scratch folders each test file made under os.tmpdir() once the file is done.
    setupFiles: ['test/support/scratch-cleanup.ts'],
  },
});
