import fs from 'node:fs/promises';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCalError } from '../../src/errors.js';
import { AgentSessionHandle, HANDLE_SCHEMA_VERSION } from '../../src/handles/schema.js';
import { StateStore } from '../../src/state/store.js';
import { scratchDir } from '../support/cal.js';
import { recordFault } from '../support/fault-matrix.js';
import { mutate, mutation } from '../support/mutation.js';

/**
 * Issue 7: the handle schema survives truncated files, wrong types, invalid UTF-8, a 10 MB file and
 * a newer schema version: a damaged handle loads as a valid one or fails with invalid_handle, and
 * its file is never modified (property tests through the state store).
 */
const FILE = 'test/security/handle-schema.test.ts';

describe('handle schema', () => {
  let root: string;
  let store: StateStore;
  const sample: AgentSessionHandle = AgentSessionHandle.parse({
    schemaVersion: HANDLE_SCHEMA_VERSION,
    id: 'abcdef1234',
    name: 'sample',
    scope: 'chat',
    ownerId: null,
    correlationId: null,
    config: {
      workingDir: { path: '/w', realPath: '/w', dev: 1, ino: 2 },
      model: null,
      systemPromptHash: null,
      mcpConfigHash: null,
      toolPolicy: 'default',
    },
    provider: {
      provider: 'claude-code',
      transport: 'tmux',
      nativeSessionId: '0b5c2a1e-7d3f-4e2a-9c1b-123456789abc',
      tmux: { socket: '/s/tmux.sock', session: 'cal-abcdef1234-1', paneId: '%1' },
      workingDir: { path: '/w', realPath: '/w', dev: 1, ino: 2 },
      model: null,
      status: 'idle',
      cli: { path: '/bin/claude', realPath: '/bin/claude.exe', version: '2.1.328' },
      transcript: { path: '/h/.claude/projects/-w/x.jsonl', offset: 1234 },
    },
    panes: [{ tmux: { socket: '/s/tmux.sock', session: 'cal-abcdef1234-1', paneId: '%1' }, startedAt: '2026-01-01T00:00:00Z', endedAt: null, endReason: null, launch: 'fresh' }],
    createdAt: '2026-01-01T00:00:00Z',
    updatedAt: '2026-01-01T00:00:00Z',
  });

  beforeAll(async () => {
    root = await scratchDir('sec-handles');
    store = await StateStore.open(path.join(root, 'state'));
  });
  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it('property: a damaged handle file loads as a valid handle or fails with invalid_handle, and is never modified', async () => {
    const text = JSON.stringify(sample, null, 2);
    const damage = fc.oneof(
      mutation.map((m) => Buffer.from(JSON.stringify(mutate(structuredClone(sample), m)) ?? '')),
      fc.nat().map((n) => Buffer.from(text.slice(0, n % text.length))),
      fc.tuple(fc.nat(), fc.uint8Array({ minLength: 1, maxLength: 8 })).map(([n, bytes]) => {
        const b = Buffer.from(text);
        const at = n % b.length;
        return Buffer.concat([b.subarray(0, at), Buffer.from(bytes), b.subarray(at)]);
      }),
      fc.integer({ min: HANDLE_SCHEMA_VERSION + 1, max: 1_000_000 }).map((v) => Buffer.from(JSON.stringify({ ...sample, schemaVersion: v, futureField: { x: 1 } }))),
    );
    const file = store.handleFile(sample.id);
    await fc.assert(
      fc.asyncProperty(damage, async (bytes) => {
        await fs.writeFile(file, bytes, { mode: 0o600 });
        try {
          const loaded = await store.loadHandle(sample.id);
          expect(AgentSessionHandle.safeParse(loaded).success).toBe(true);
        } catch (err) {
          expect(isCalError(err) ? err.kind : String(err)).toBe('invalid_handle');
        }
        expect(Buffer.compare(await fs.readFile(file), bytes)).toBe(0);
      }),
      { numRuns: 300 },
    );
  });

  it('a newer schemaVersion is a clear invalid_handle naming both versions; a 10 MB handle file is invalid_handle', async () => {
    const file = store.handleFile(sample.id);
    const newer = JSON.stringify({ ...sample, schemaVersion: HANDLE_SCHEMA_VERSION + 1 });
    await fs.writeFile(file, newer, { mode: 0o600 });
    await expect(store.loadHandle(sample.id)).rejects.toMatchObject({
      kind: 'invalid_handle',
      message: expect.stringMatching(new RegExp(`schema version ${HANDLE_SCHEMA_VERSION + 1}, newer than this cal understands \\(${HANDLE_SCHEMA_VERSION}\\).*left untouched`)),
    });
    expect(await fs.readFile(file, 'utf8')).toBe(newer);
    const big = JSON.stringify({ ...sample, name: 'n'.repeat(10 << 20) });
    await fs.writeFile(file, big, { mode: 0o600 });
    await expect(store.loadHandle(sample.id)).rejects.toMatchObject({ kind: 'invalid_handle' });
    expect((await fs.stat(file)).size).toBe(big.length);
    recordFault({
      id: 'parser.handle-schema',
      area: 'parser',
      fault: 'handle file truncated, with wrong types, invalid UTF-8, 10 MB, or a newer schemaVersion',
      how: 'fast-check damage of a valid handle, loaded through the state store',
      outcome: 'a valid handle or invalid_handle (exit 4), never another error; newer schema: "schema version N, newer than this cal understands (1); upgrade cal (the file was left untouched)"',
      state: 'file byte-for-byte unchanged',
      test: FILE,
    });
  });
});
