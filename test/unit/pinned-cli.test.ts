import { chmodSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkPinned, pinCli } from '../../src/adapters/resolve.js';
import { CalError } from '../../src/errors.js';
import { AgentSessionHandle, PinnedCli } from '../../src/handles/schema.js';
import { scratchDir } from '../support/cal.js';
import { removeScratch } from '../support/scratch.js';

/**
 * A CLI is pinned by the identity of its real path, with its version read once: an unchanged
 * file is never asked `--version` again; a changed one is asked once, and a different version
 * is cli_missing. The fake CLI counts its `--version` runs in a file.
 */
describe('pinning a CLI by file identity', () => {
  let root: string;
  let exe: string;
  let calls: string;
  const env = () => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', CALLS: calls });

  function writeCli(file: string, version: string, padding = ''): void {
    writeFileSync(file, `#!/bin/sh\n# ${padding}\necho run >> "$CALLS"\necho "fake-cli ${version}"\n`);
    chmodSync(file, 0o755);
  }
  const versionRuns = () => {
    try {
      return readFileSync(calls, 'utf8').split('\n').filter(Boolean).length;
    } catch {
      return 0;
    }
  };

  beforeEach(async () => {
    root = await scratchDir('pinned-cli');
    exe = path.join(root, 'fake-cli');
    calls = path.join(root, 'calls');
    writeCli(exe, '1.2.3');
  });

  afterEach(async () => {
    await removeScratch(root);
  });

  it('reads the version once at pin time and records the identity of the real path', async () => {
    const pinned = await pinCli({ path: exe, realPath: exe }, env());
    expect(pinned.version).toBe('1.2.3');
    expect(pinned.identity).toMatchObject({ size: expect.any(Number), mtimeMs: expect.any(Number), ino: expect.any(Number), dev: expect.any(Number) });
    expect(versionRuns()).toBe(1);
  });

  it('an unchanged file is not run again, however many turns', async () => {
    const pinned = await pinCli({ path: exe, realPath: exe }, env());
    for (let i = 0; i < 5; i++) expect(await checkPinned(pinned, env(), 'fake')).toEqual(pinned);
    expect(versionRuns()).toBe(1);
  });

  it('a changed file with the same version is read once, and its new identity kept', async () => {
    const pinned = await pinCli({ path: exe, realPath: exe }, env());
    writeCli(exe, '1.2.3', 'rebuilt');
    const kept = await checkPinned(pinned, env(), 'fake');
    expect(versionRuns()).toBe(2);
    expect(kept.version).toBe('1.2.3');
    expect(kept.identity).not.toEqual(pinned.identity);
    await checkPinned(kept, env(), 'fake');
    expect(versionRuns()).toBe(2);
  });

  it("an adapter's own version reader is used both at pin time and for a changed file (Gemini asks in a throwaway home)", async () => {
    const asked: Array<Record<string, string>> = [];
    const versionOf = async (_exe: string, e: Record<string, string>) => {
      asked.push(e);
      return '1.2.3';
    };
    const pinned = await pinCli({ path: exe, realPath: exe }, env(), versionOf);
    writeCli(exe, '1.2.3', 'rebuilt');
    await checkPinned(pinned, env(), 'fake', versionOf);
    expect(asked).toHaveLength(2);
    expect(versionRuns()).toBe(0);
  });

  it('only the mtime changed: read once again', async () => {
    const pinned = await pinCli({ path: exe, realPath: exe }, env());
    utimesSync(exe, new Date('2020-01-01'), new Date('2020-01-01'));
    await checkPinned(pinned, env(), 'fake');
    expect(versionRuns()).toBe(2);
  });

  it('a binary replaced by another version (new inode, same size) is cli_missing naming both versions', async () => {
    const pinned = await pinCli({ path: exe, realPath: exe }, env());
    const next = path.join(root, 'fake-cli.new');
    writeCli(next, '1.2.4');
    renameSync(next, exe);
    const err = await checkPinned(pinned, env(), 'fake').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CalError);
    expect((err as CalError).kind).toBe('cli_missing');
    expect((err as CalError).message).toContain('now version 1.2.4');
    expect((err as CalError).message).toContain('pinned to 1.2.3');
  });

  it('a binary that is gone is cli_missing without running anything', async () => {
    const pinned = await pinCli({ path: exe, realPath: exe }, env());
    rmSync(exe);
    const err = await checkPinned(pinned, env(), 'fake').catch((e: unknown) => e);
    expect((err as CalError).kind).toBe('cli_missing');
    expect((err as CalError).message).toContain('is gone');
    expect(versionRuns()).toBe(1);
  });

  it('a pin from before identities were kept is read once, then carries the identity', async () => {
    const old: PinnedCli = { path: exe, realPath: exe, version: '1.2.3' };
    const kept = await checkPinned(old, env(), 'fake');
    expect(versionRuns()).toBe(1);
    expect(kept.identity).toBeDefined();
    await checkPinned(kept, env(), 'fake');
    expect(versionRuns()).toBe(1);
  });

  it('handles with and without an identity both load (the schema version is unchanged)', () => {
    const base = {
      schemaVersion: 1,
      id: 'abcdef1234',
      name: null,
      ownerId: null,
      correlationId: null,
      config: { workingDir: { path: '/w', realPath: '/w', dev: 1, ino: 2 }, model: null, systemPromptHash: null, mcpConfigHash: null, toolPolicy: 'default' },
      panes: [],
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
    };
    const provider = (cli: unknown) => ({
      provider: 'claude-code',
      transport: 'tmux',
      nativeSessionId: null,
      tmux: null,
      workingDir: { path: '/w', realPath: '/w', dev: 1, ino: 2 },
      model: null,
      status: 'idle',
      cli,
      transcript: null,
    });
    const old = AgentSessionHandle.parse({ ...base, provider: provider({ path: '/c', realPath: '/c', version: '1.0.0' }) });
    expect(old.provider.cli?.identity).toBeUndefined();
    const identity = { size: 10, mtimeMs: 1700000000000.123, dev: 2049, ino: 1234567 };
    const now = AgentSessionHandle.parse(JSON.parse(JSON.stringify({ ...base, provider: provider({ path: '/c', realPath: '/c', version: '1.0.0', identity }) })));
    expect(now.provider.cli?.identity).toEqual(identity);
  });
});
