import { execFileSync } from 'node:child_process';
import { existsSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSessions } from '../../src/index.js';
import { createWorktree, releaseWorktree, worktreePath } from '../../src/git/worktree.js';
import { scratchDirSync } from '../support/scratch.js';

/** A repository with one commit on `main`, in a scratch folder. */
function repo(): string {
  const root = realpathSync(scratchDirSync('git-wt'));
  const dir = path.join(root, 'proj');
  const git = (...args: string[]) => execFileSync('git', args, { cwd: root, stdio: 'pipe' });
  git('init', '--quiet', '-b', 'main', dir);
  const inRepo = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: dir, stdio: 'pipe' }).toString().trim();
  writeFileSync(path.join(dir, 'a.txt'), 'a\n');
  inRepo('add', 'a.txt');
  inRepo('commit', '--quiet', '-m', 'one');
  return dir;
}

const gitIn = (dir: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: dir, stdio: 'pipe' }).toString().trim();
const branches = (dir: string) => gitIn(dir, 'branch', '--format=%(refname:short)').split('\n').sort();

describe('a session in its own git worktree (src/git/worktree.ts)', () => {
  it('creates <repo>.cal-worktrees/<name> on cal/<name> from the checked-out branch, and removes it with its branch when clean and merged', async () => {
    const dir = repo();
    const tree = await createWorktree({ cwd: dir, name: 'fix' });
    expect(tree).toEqual({ path: worktreePath(dir, 'fix'), branch: 'cal/fix', repo: dir, base: 'main' });
    expect(tree.path).toBe(path.join(path.dirname(dir), 'proj.cal-worktrees', 'fix'));
    expect(gitIn(tree.path, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('cal/fix');
    expect(branches(dir)).toEqual(['cal/fix', 'main']);
    expect(await releaseWorktree(tree)).toEqual({ path: tree.path, branch: 'cal/fix', removed: true, kept: null });
    expect(existsSync(tree.path)).toBe(false);
    expect(existsSync(path.dirname(tree.path))).toBe(false);
    expect(branches(dir)).toEqual(['main']);
  });

  it('keeps a worktree with uncommitted changes, and one whose branch has unmerged commits; a merged one goes', async () => {
    const dir = repo();
    const dirty = await createWorktree({ cwd: dir, name: 'dirty', branch: 'feature/dirty' });
    writeFileSync(path.join(dirty.path, 'new.txt'), 'x\n');
    expect(await releaseWorktree(dirty)).toMatchObject({ removed: false, kept: 'it has uncommitted changes' });
    expect(existsSync(dirty.path)).toBe(true);

    const ahead = await createWorktree({ cwd: dir, name: 'ahead' });
    writeFileSync(path.join(ahead.path, 'b.txt'), 'b\n');
    gitIn(ahead.path, 'add', 'b.txt');
    gitIn(ahead.path, 'commit', '--quiet', '-m', 'two');
    expect(await releaseWorktree(ahead)).toMatchObject({ removed: false, kept: 'its branch cal/ahead has commits not merged into main' });
    expect(existsSync(ahead.path)).toBe(true);
    gitIn(dir, 'merge', '--quiet', '--ff-only', 'cal/ahead');
    expect(await releaseWorktree(ahead)).toMatchObject({ removed: true });
    expect(branches(dir)).toEqual(['feature/dirty', 'main']);
  });

  it('refuses bad input with one usage line and creates nothing: not a repository, a branch that exists, a dirty base, an invalid branch', async () => {
    const dir = repo();
    const plain = realpathSync(scratchDirSync('git-plain'));
    await expect(createWorktree({ cwd: plain, name: 'x' })).rejects.toMatchObject({ kind: 'usage', message: `--worktree: ${plain} is not in a git repository` });
    await expect(createWorktree({ cwd: dir, name: 'x', branch: 'main' })).rejects.toMatchObject({ kind: 'usage', message: `--worktree: the branch main already exists in ${dir}; pick another with --branch` });
    await expect(createWorktree({ cwd: dir, name: 'x', branch: 'bad..name' })).rejects.toMatchObject({ kind: 'usage' });
    writeFileSync(path.join(dir, 'a.txt'), 'changed\n');
    await expect(createWorktree({ cwd: dir, name: 'x' })).rejects.toMatchObject({ kind: 'usage', message: `--worktree: ${dir} has uncommitted changes, which the new worktree would not hold; commit or stash them first` });
    expect(existsSync(worktreePath(dir, 'x'))).toBe(false);
    expect(existsSync(path.dirname(worktreePath(dir, 'x')))).toBe(false);
    expect(branches(dir)).toEqual(['main']);
  });

  it('the library: a branch without worktree is usage; an API provider with a worktree is usage; neither creates anything', async () => {
    const dir = repo();
    const sessions = await openSessions({ stateDir: path.join(path.dirname(dir), 'state'), env: { PATH: process.env.PATH ?? '', HOME: path.dirname(dir), ANTHROPIC_API_KEY: 'test-key' } });
    await expect(sessions.start({ provider: 'codex', message: 'hi', cwd: dir, branch: 'b' })).rejects.toMatchObject({ kind: 'usage', message: expect.stringContaining('pass --worktree') });
    await expect(sessions.start({ provider: 'anthropic', message: 'hi', cwd: dir, worktree: true })).rejects.toMatchObject({ kind: 'usage', message: expect.stringContaining('--worktree is for coding-agent CLIs') });
    expect(existsSync(path.join(path.dirname(dir), 'proj.cal-worktrees'))).toBe(false);
    expect((await sessions.inspect()).handles).toEqual([]);
  });

  it('from a subfolder of the repository, the worktree is of the whole repository', async () => {
    const dir = repo();
    const sub = path.join(dir, 'sub');
    execFileSync('mkdir', [sub]);
    const tree = await createWorktree({ cwd: sub, name: 'deep' });
    expect(tree.repo).toBe(dir);
    expect(existsSync(path.join(tree.path, 'a.txt'))).toBe(true);
  });
});
