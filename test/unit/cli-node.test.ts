import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { engineFloor, nodeRequirement, packageVersion } from '../../src/adapters/cli-node.js';
import { pinCli } from '../../src/adapters/resolve.js';
import { CalError } from '../../src/errors.js';

/**
 * Issue 44: a CLI runs on the node first on PATH (its `#!/usr/bin/env node` line); one whose
 * package needs a newer Node (Pi 1.x: >= 22.19) is refused before it is launched, not left to
 * die in its pane.
 */
const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

function fakeCli(nodeRange: string | null, shebang = '#!/usr/bin/env node'): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'cal-cli-node-'));
  roots.push(root);
  const pkg = path.join(root, 'node_modules', 'fake-cli');
  mkdirSync(path.join(pkg, 'dist'), { recursive: true });
  writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ name: 'fake-cli', version: '1.2.3', ...(nodeRange ? { engines: { node: nodeRange } } : {}) }));
  const bin = path.join(pkg, 'dist', 'cli.js');
  writeFileSync(bin, shebang.includes('node') ? `${shebang}\nconsole.log('1.2.3');\n` : `${shebang}\necho 1.2.3\n`);
  chmodSync(bin, 0o755);
  return bin;
}

const env = { PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin` };

describe('the Node a CLI runs on', () => {
  it('reads a plain >= floor and nothing else', () => {
    expect(engineFloor('>=22.19.0')).toBe('22.19.0');
    expect(engineFloor('>= 20')).toBe('20');
    expect(engineFloor('^20 || ^22')).toBeNull();
  });

  it('refuses a Node CLI whose package needs a newer Node than the node on PATH, naming both and the fix', async () => {
    const bin = fakeCli('>=99.0.0');
    const err = await pinCli({ path: bin, realPath: bin }, env).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CalError);
    expect((err as CalError).kind).toBe('cli_unsupported');
    expect((err as CalError).message).toContain(`fake-cli at ${bin} needs Node >=99.0.0, but the node first on PATH`);
    expect((err as CalError).message).toContain(`is ${process.versions.node}: put a Node 99.0.0 or newer first on PATH`);
  });

  it('runs a Node CLI whose floor the node on PATH meets, and never checks a binary that is not a node script', async () => {
    const ok = fakeCli('>=18.0.0');
    expect((await pinCli({ path: ok, realPath: ok }, env)).version).toBe('1.2.3');
    const native = fakeCli('>=99.0.0', '#!/bin/sh');
    expect(nodeRequirement(native)).toBeNull();
    expect((await pinCli({ path: native, realPath: native }, env)).version).toBe('1.2.3');
  });
});

describe('a Node CLI pinned by its package version (no --version process)', () => {
  function pkgCli(bin: unknown, version = '9.9.9', shebang = '#!/usr/bin/env node'): string {
    const root = mkdtempSync(path.join(os.tmpdir(), 'cal-cli-version-'));
    roots.push(root);
    mkdirSync(path.join(root, 'dist'), { recursive: true });
    writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'some-cli', version, ...(bin === undefined ? {} : { bin }) }));
    const file = path.join(root, 'dist', 'cli.js');
    // Says another version, and exits 1: the package's version is taken without running it.
    writeFileSync(file, `${shebang}\nconsole.log('1.0.0'); process.exit(1);\n`);
    chmodSync(file, 0o755);
    return file;
  }

  it("reads the version of the package whose bin is this file, for a bin map or a single bin", () => {
    expect(packageVersion(pkgCli({ some: 'dist/cli.js' }))).toBe('9.9.9');
    expect(packageVersion(pkgCli('./dist/cli.js', '2.1.29'))).toBe('2.1.29');
  });

  it('asks the binary when the file is not the package bin, is native, or the version is not a release', () => {
    expect(packageVersion(pkgCli({ other: 'dist/other.js' }))).toBeNull();
    expect(packageVersion(pkgCli(undefined))).toBeNull();
    expect(packageVersion(pkgCli({ some: 'dist/cli.js' }, '9.9.9', '\x7fELF'))).toBeNull();
    expect(packageVersion(pkgCli({ some: 'dist/cli.js' }, 'latest'))).toBeNull();
  });

  it('pinCli takes it without running the CLI', async () => {
    const file = pkgCli({ some: 'dist/cli.js' });
    const pinned = await pinCli({ path: file, realPath: file }, { PATH: process.env.PATH ?? '' }, async () => {
      throw new Error('the CLI was run');
    });
    expect(pinned.version).toBe('9.9.9');
  });
});
