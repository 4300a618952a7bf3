import { afterAll } from 'vitest';
import { removeScratchDirs } from './scratch.js';

// A setup file: this afterAll belongs to every test file and, registered first, runs after the
// file's own (hooks run as a stack), once its tmux servers and CLIs are stopped.
afterAll(removeScratchDirs);
