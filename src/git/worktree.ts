import { existsSync, mkdirSync, rmdirSync } from 'node:fs';
import path from 'node:path';
import { CalError } from '../errors.js';
import { runFile } from '../util/spawn.js';

/**
 * A session in its own git worktree (issue 52), as claude-squad and agent-deck give each agent
 * one: `git worktree add -b <branch>` from the repository's HEAD, in a folder next to the
 * repository (`<repo>.cal-worktrees/<name>`: on the same filesystem, outside the repository so
 * it needs no .gitignore entry, and easy to find). Only git's own commands touch the repository.
 */
export interface WorktreeRecord {
  /** The worktree's folder (the session's working directory). */
  path: string;
  /** The branch the worktree was created on. */
  branch: string;
  /** The top of the repository it was made from. */
  repo: string;
  /** What it branched from: the repository's branch then checked out, else its commit. */
  base: string;
}

export interface WorktreeRequest {
  /** A folder inside the repository. */
  cwd: string;
  /** The worktree's folder name (the session's name or handle id). */
  name: string;
  /** The new branch (default `cal/<name>`). */
  branch?: string;
}

interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

async function git(cwd: string, args: string[]): Promise<GitResult> {
  // LC_ALL=C: git's messages are read only to be quoted, but in one language.
  const res = await runFile('git', args, { cwd, env: { ...process.env, LC_ALL: 'C', GIT_TERMINAL_PROMPT: '0' }, timeoutMs: 60_000, maxBuffer: 8 << 20 });
  return { code: res.error ? 127 : (res.exitCode ?? 128), stdout: res.stdout, stderr: res.stderr };
}

async function gitOk(cwd: string, args: string[], what: string): Promise<string> {
  const res = await git(cwd, args);
  if (res.code !== 0) throw new CalError('internal', `git ${what} failed (exit ${res.code}): ${res.stderr.trim() || 'no message from git'}`);
  return res.stdout.trim();
}

/** The default branch of a session's worktree. */
export function defaultBranch(name: string): string {
  return `cal/${name}`;
}

/** Where a worktree of `repo` named `name` goes: `<repo>.cal-worktrees/<name>`, beside the repository. */
export function worktreePath(repo: string, name: string): string {
  return path.join(path.dirname(repo), `${path.basename(repo)}.cal-worktrees`, name);
}

/**
 * Checks everything first (a git repository, a branch name that is free and valid, a clean base,
 * a folder not yet there), then creates the worktree: bad input creates nothing (usage).
 */
export async function createWorktree(req: WorktreeRequest): Promise<WorktreeRecord> {
  if (!existsSync(req.cwd)) throw new CalError('usage', `--cwd ${JSON.stringify(req.cwd)} does not exist`);
  const top = await git(req.cwd, ['rev-parse', '--show-toplevel']);
  if (top.code !== 0) throw new CalError('usage', `--worktree: ${req.cwd} is not in a git repository`);
  const repo = top.stdout.trim();
  const head = await git(repo, ['rev-parse', '--verify', '--quiet', 'HEAD^{commit}']);
  if (head.code !== 0) throw new CalError('usage', `--worktree: the repository ${repo} has no commit to branch from yet`);
  const branch = req.branch ?? defaultBranch(req.name);
  if ((await git(repo, ['check-ref-format', '--branch', branch])).code !== 0) throw new CalError('usage', `--branch ${JSON.stringify(branch)} is not a valid branch name`);
  if ((await git(repo, ['show-ref', '--verify', '--quiet', `refs/heads/${branch}`])).code === 0) {
    throw new CalError('usage', `--worktree: the branch ${branch} already exists in ${repo}; pick another with --branch`);
  }
  const status = await gitOk(repo, ['status', '--porcelain', '--untracked-files=normal'], 'status');
  if (status !== '') throw new CalError('usage', `--worktree: ${repo} has uncommitted changes, which the new worktree would not hold; commit or stash them first`);
  const folder = worktreePath(repo, req.name);
  if (existsSync(folder)) throw new CalError('usage', `--worktree: ${folder} already exists; remove it or pick another --name`);
  const current = await git(repo, ['symbolic-ref', '--quiet', '--short', 'HEAD']);
  const base = current.code === 0 ? current.stdout.trim() : head.stdout.trim();
  mkdirSync(path.dirname(folder), { recursive: true });
  await gitOk(repo, ['worktree', 'add', '--quiet', '-b', branch, folder, head.stdout.trim()], 'worktree add');
  return { path: folder, branch, repo, base };
}

export interface WorktreeRelease {
  path: string;
  branch: string;
  /** Whether the worktree and its branch were deleted. */
  removed: boolean;
  /** Why it was kept, when it was. */
  kept: string | null;
}

/**
 * When its session is removed: a clean worktree whose branch is merged into the base it came
 * from is deleted with its branch; one holding uncommitted or unmerged work is kept, and says why.
 */
export async function releaseWorktree(tree: WorktreeRecord): Promise<WorktreeRelease> {
  const keep = (kept: string): WorktreeRelease => ({ path: tree.path, branch: tree.branch, removed: false, kept });
  if (!existsSync(tree.path)) {
    // Gone already (removed by hand): git's record of it is pruned; its branch stays as it is.
    await git(tree.repo, ['worktree', 'prune']);
    return keep('its folder is gone already; the branch is left as it is');
  }
  const status = await git(tree.path, ['status', '--porcelain', '--untracked-files=normal']);
  if (status.code !== 0) return keep(`git status failed there: ${status.stderr.trim()}`);
  if (status.stdout.trim() !== '') return keep('it has uncommitted changes');
  const merged = await git(tree.repo, ['merge-base', '--is-ancestor', `refs/heads/${tree.branch}`, tree.base]);
  if (merged.code !== 0) return keep(`its branch ${tree.branch} has commits not merged into ${tree.base}`);
  const removed = await git(tree.repo, ['worktree', 'remove', tree.path]);
  if (removed.code !== 0) return keep(`git worktree remove failed: ${removed.stderr.trim()}`);
  // Checked merged above (not `branch -d`, which asks about whatever the repository has checked out now).
  await git(tree.repo, ['branch', '-D', '--quiet', tree.branch]);
  try {
    rmdirSync(path.dirname(tree.path));
  } catch {
    // Other sessions' worktrees are still there.
  }
  return { path: tree.path, branch: tree.branch, removed: true, kept: null };
}
