import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { startModelServer, type ModelServer } from '../../src/model/server.js';

/**
 * The scripted model of one test file (vitest loads this module afresh for each file): started
 * before its tests with its log in a scratch folder, its in-process log cleared before each test,
 * closed after them. `server` and `dir` are live bindings, set once the file's tests begin.
 */
export let server: ModelServer;
export let dir: string;
export const logFile = (): string => path.join(dir, 'logs', 'requests.jsonl');

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cal-model-server-test-'));
  server = await startModelServer({ logFile: logFile() });
});
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => server.clearLog());
