import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { digestHex } from '../../src/util/digest.js';
import { randomBytes, randomUUID } from '../../src/util/random.js';
import { repoRoot } from '../support/clis.js';

/** util/random.ts and util/digest.ts: what node:crypto gave, without loading it at start. */
describe('random bytes and digests without node:crypto at start', () => {
  it('hands out bytes of the asked length, never the same ones twice, across pool refills', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const b = randomBytes(i % 2 === 0 ? 8 : 37);
      expect(b.length).toBe(i % 2 === 0 ? 8 : 37);
      seen.add(b.toString('hex'));
    }
    expect(seen.size).toBe(200);
    expect(randomBytes(1000).length).toBe(1000);
  });

  it('makes RFC 4122 version 4 UUIDs', () => {
    const ids = Array.from({ length: 100 }, () => randomUUID());
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(100);
  });

  it('digests as node:crypto does', async () => {
    const { createHash } = await import('node:crypto');
    expect(digestHex('sha256', 'cal')).toBe(createHash('sha256').update('cal').digest('hex'));
    expect(digestHex('md5', Buffer.from('/work'))).toBe(createHash('md5').update('/work').digest('hex'));
  });

  it('loads node:crypto only when something is hashed', async () => {
    const script = `
      const random = await import(${JSON.stringify(path.join(repoRoot, 'dist', 'util', 'random.js'))});
      const digest = await import(${JSON.stringify(path.join(repoRoot, 'dist', 'util', 'digest.js'))});
      random.randomUUID(); random.randomBytes(300);
      const before = process.moduleLoadList.includes('NativeModule crypto');
      digest.digestHex('sha256', 'x');
      console.log(JSON.stringify({ before, after: process.moduleLoadList.includes('NativeModule crypto') }));`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script]);
    expect(JSON.parse(stdout)).toEqual({ before: false, after: true });
  });
});
