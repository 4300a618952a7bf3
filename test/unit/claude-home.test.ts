import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createManagedHome, preAnswerDialogs } from '../../src/adapters/claude-code/home.js';

describe('preAnswerDialogs', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const d of dirs.splice(0)) await fs.rm(d, { recursive: true, force: true });
  });

  it('answers the dialogs once; a later launch in the same folder rewrites nothing and leaves no lock', async () => {
    const home = await fs.mkdtemp(path.join(os.tmpdir(), 'cal-claude-home-'));
    dirs.push(home);
    await createManagedHome(home);
    const env = { HOME: home, ANTHROPIC_API_KEY: 'sk-test-0123456789abcdefghij' };
    const file = path.join(home, '.claude.json');
    await preAnswerDialogs(env, '/work/project', { trust: true, managed: true });
    const first = JSON.parse(await fs.readFile(file, 'utf8'));
    expect(first.projects['/work/project'].hasTrustDialogAccepted).toBe(true);
    expect(first.hasCompletedOnboarding).toBe(true);
    const { ino, mtimeMs } = await fs.stat(file);

    await preAnswerDialogs(env, '/work/project', { trust: true, managed: true });
    const again = await fs.stat(file);
    expect({ ino: again.ino, mtimeMs: again.mtimeMs }).toEqual({ ino, mtimeMs });
    await expect(fs.stat(`${file}.lock`)).rejects.toThrow(/ENOENT/);

    // Another folder still gets its trust entry (and keeps the first one's).
    await preAnswerDialogs(env, '/work/other', { trust: true, managed: true });
    const both = JSON.parse(await fs.readFile(file, 'utf8'));
    expect(Object.keys(both.projects).sort()).toEqual(['/work/other', '/work/project']);
  });
});
