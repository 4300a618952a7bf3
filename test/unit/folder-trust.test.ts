import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isFolderTrusted } from '../../src/adapters/claude-code/home.js';
import { codexTrusts } from '../../src/adapters/codex/config.js';
import { loadRegisteredAdapters } from '../../src/adapters/registry.js';
import { trustedByFile, trustInFile } from '../../src/adapters/trusted-folders-file.js';
import type { CliAdapter, FolderTrust, SessionConfig } from '../../src/adapters/types.js';
import { prepareLaunch } from '../../src/engine/folder-trust.js';

const dirs: string[] = [];
function scratch(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cal-folder-trust-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const config = (trustWorkingDir: boolean): SessionConfig => ({ cwd: '/work/repo', model: null, systemPrompt: null, mcpConfigPath: null, toolPolicy: 'default', trustWorkingDir });

/** An adapter that records what the engine asked of it. */
function adapterWith(trusted: boolean): { adapter: CliAdapter; calls: string[] } {
  const calls: string[] = [];
  const folderTrust: FolderTrust = {
    kind: 'asks',
    trusted: (_env, cwd, transport) => (calls.push(`trusted ${cwd} ${transport}`), trusted),
    trust: async (_env, cwd) => (calls.push(`trust ${cwd}`), true),
    howToTrust: (cwd) => `open the CLI in ${cwd}`,
  };
  const adapter = { name: 'codex', folderTrust, prepare: async () => (calls.push('prepare'), false) } as unknown as CliAdapter;
  return { adapter, calls };
}

describe('the trust policy in the adapter contract (issue 50, item 6)', () => {
  it('every registered CLI adapter declares how its CLI trusts a folder', async () => {
    const adapters = await loadRegisteredAdapters();
    expect(adapters.length).toBeGreaterThanOrEqual(9);
    for (const a of adapters) {
      const trust = a.folderTrust as FolderTrust | undefined;
      expect(trust, a.name).toBeDefined();
      if (trust?.kind === 'none') expect(trust.why.length, a.name).toBeGreaterThan(10);
      else expect([typeof trust?.trusted, typeof trust?.trust, typeof trust?.howToTrust], a.name).toEqual(['function', 'function', 'function']);
    }
    // The CLIs known to ask (research notes): none of them may say it has no notion of trust.
    const asks = adapters.filter((a) => a.folderTrust.kind === 'asks').map((a) => a.name);
    expect(asks).toEqual(expect.arrayContaining(['claude-code', 'codex', 'gemini', 'copilot', 'qwen', 'cursor']));
  });

  it('the engine trusts the folder by default, and under the policy off refuses an untrusted one before prepare', async () => {
    const on = adapterWith(false);
    expect(await prepareLaunch(on.adapter, {}, config(true), 'tmux')).toBe(true);
    expect(on.calls).toEqual(['trust /work/repo', 'prepare']);

    const off = adapterWith(false);
    await expect(prepareLaunch(off.adapter, {}, config(false), 'structured')).rejects.toMatchObject({ kind: 'untrusted_folder', exitCode: 20, message: expect.stringContaining('codex does not trust /work/repo') });
    expect(off.calls).toEqual(['trusted /work/repo structured']);

    const mine = adapterWith(true);
    expect(await prepareLaunch(mine.adapter, {}, config(false), 'tmux')).toBe(false);
    expect(mine.calls).toEqual(['trusted /work/repo tmux', 'prepare']);
  });

  // A CLI cal's entry started early (early-launch.ts) is kept only when the launch's preparation
  // says it wrote nothing: an adapter that answered anything but false discarded every one.
  it('every registered CLI adapter, prepared a second time for the same folder, says it wrote nothing', async () => {
    for (const adapter of await loadRegisteredAdapters()) {
      const home = scratch();
      const cwd = path.join(home, 'work');
      mkdirSync(cwd);
      mkdirSync(path.join(home, '.codex'));
      const env = { HOME: home, CODEX_HOME: path.join(home, '.codex'), XDG_CONFIG_HOME: path.join(home, '.config'), XDG_DATA_HOME: path.join(home, '.local', 'share'), PATH: process.env.PATH ?? '' };
      const cfg = { ...config(true), cwd };
      const first = await prepareLaunch(adapter, env, cfg, 'structured');
      expect(typeof first, adapter.name).toBe('boolean');
      expect(await prepareLaunch(adapter, env, cfg, 'structured'), adapter.name).toBe(false);
    }
  });

  it('Claude Code: a trusted ancestor covers its subfolders', () => {
    const home = scratch();
    writeFileSync(path.join(home, '.claude.json'), JSON.stringify({ projects: { '/work': { hasTrustDialogAccepted: true }, '/other': { hasTrustDialogAccepted: false } } }));
    expect(isFolderTrusted({ HOME: home }, '/work/repo/sub')).toBe(true);
    expect(isFolderTrusted({ HOME: home }, '/other/x')).toBe(false);
    expect(isFolderTrusted({ HOME: scratch() }, '/work')).toBe(false);
  });

  it('Codex: no question outside a git repository; inside, its config must trust the root or a folder on the way', () => {
    const root = scratch();
    const repo = path.join(root, 'repo');
    mkdirSync(path.join(repo, '.git'), { recursive: true });
    mkdirSync(path.join(repo, 'a', 'b'), { recursive: true });
    expect(codexTrusts(null, root)).toBe(true);
    expect(codexTrusts(null, repo)).toBe(false);
    expect(codexTrusts(`model = "x"\n[projects."${repo}"]\ntrust_level = "trusted"\n`, path.join(repo, 'a', 'b'))).toBe(true);
    expect(codexTrusts(`[projects.'${path.join(repo, 'a')}']\ntrust_level = "trusted" # mine\n`, path.join(repo, 'a', 'b'))).toBe(true);
    expect(codexTrusts(`[projects."${repo}"]\ntrust_level = "untrusted"\n[other]\ntrust_level = "trusted"\n`, repo)).toBe(false);
  });

  it('trustedFolders.json (Gemini, Qwen): a folder, its parent, a folder distrusted by name; cal adds TRUST_FOLDER and keeps the rest', async () => {
    const dir = scratch();
    const file = path.join(dir, 'trustedFolders.json');
    writeFileSync(file, JSON.stringify({ '/w/a': 'TRUST_FOLDER', '/p/child': 'TRUST_PARENT', '/w/a/no': 'DO_NOT_TRUST' }));
    expect(trustedByFile(file, '/w/a/x')).toBe(true);
    expect(trustedByFile(file, '/p/other')).toBe(true);
    expect(trustedByFile(file, '/w/a/no')).toBe(false);
    expect(trustedByFile(file, '/w/ab')).toBe(false);
    expect(await trustInFile(file, '/w/a/x')).toBe(false);
    expect(await trustInFile(file, '/z')).toBe(true);
    expect(trustedByFile(file, '/z')).toBe(true);
    expect(trustedByFile(path.join(dir, 'missing.json'), '/z')).toBe(false);
  });
});
