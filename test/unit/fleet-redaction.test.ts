import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { allowedRoots, checkAllowed } from '../../src/fleet/allowed-dirs.js';
import { scrubbed } from '../../src/fleet/connection.js';
import { redactedUrl } from '../../src/fleet/protocol.js';

describe('a fleet URL in a message (docs/security.md)', () => {
  it('shows no password in any form: in the URL, as a user alone, as a query value', () => {
    expect(redactedUrl('redis://:pw-one@h:6379')).toBe('redis://:***@h:6379');
    expect(redactedUrl('redis://user:pw-two@h:6379/0')).toBe('redis://user:***@h:6379/0');
    expect(redactedUrl('redis://pw-three@h:6379')).toBe('redis://***@h:6379');
    expect(redactedUrl('rediss://h:6380/?password=pw-four&db=1')).toBe('rediss://h:6380/?password=***&db=***');
    expect(redactedUrl('http://x:pw-five@h/')).not.toContain('pw-five');
    expect(redactedUrl('not a url pw-six')).toBe('(an unreadable Redis URL)');
  });

  it('takes every secret out of a message that quotes it, decoded or not', () => {
    const url = 'redis://h:1/?password=p%40ss-word';
    expect(scrubbed('auth p@ss-word failed; p%40ss-word', url)).toBe('auth *** failed; ***');
    expect(scrubbed('the given secret-file-pw leaked', 'redis://h:1', 'secret-file-pw')).toBe('the given *** leaked');
  });
});

describe('cal worker --allow-dir', () => {
  it('allows a folder under a root by real path; refuses one outside, through .. or a link', async () => {
    const root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'cal-allow-')));
    try {
      await fs.mkdir(path.join(root, 'ok', 'deep'), { recursive: true });
      await fs.mkdir(path.join(root, '..ok-sibling-name'), { recursive: true });
      await fs.mkdir(path.join(root, 'out'));
      await fs.symlink(path.join(root, 'out'), path.join(root, 'ok', 'link'));
      const roots = allowedRoots([path.join(root, 'ok')], '/');
      expect(() => checkAllowed(roots, path.join(root, 'ok'), 'm1', '/')).not.toThrow();
      expect(() => checkAllowed(roots, path.join(root, 'ok', 'deep'), 'm1', '/')).not.toThrow();
      for (const bad of [path.join(root, 'out'), path.join(root, 'ok', '..', 'out'), path.join(root, 'ok', 'link'), path.join(root, 'missing')]) {
        expect(() => checkAllowed(roots, bad, 'm1', '/')).toThrow(expect.objectContaining({ kind: 'usage' }));
      }
      // A name that begins with two dots is inside, not a way out.
      expect(() => checkAllowed(allowedRoots([root], '/'), path.join(root, '..ok-sibling-name'), 'm1', '/')).not.toThrow();
      // The default root: the worker's own current directory.
      expect(allowedRoots(undefined, path.join(root, 'ok'))).toEqual([path.join(root, 'ok')]);
      expect(() => allowedRoots([path.join(root, 'missing')], '/')).toThrow(expect.objectContaining({ kind: 'usage' }));
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  });
});
