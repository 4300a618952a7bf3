import { existsSync, readFileSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { CalError } from '../../errors.js';
import { z } from '../../util/zod.js';
import { optionKeys } from '../dialog-option.js';

/**
 * Pre-answers Claude Code's startup dialogs (research: claude-code.md §2).
 *
 * In the user's own config cal writes one thing, and only under the trust policy's default
 * (engine/folder-trust.ts): `projects["<real cwd>"].hasTrustDialogAccepted`.
 * In a HOME that cal manages (demo, certify, tests: a folder holding `.cal-managed-home`) it also
 * marks onboarding done, approves the API key in the environment (by its last 20 characters, as
 * the CLI itself does) and skips the bypass-permissions warning (the settings key newer releases
 * read and the global flag older ones read).
 */
export const MANAGED_HOME_MARKER = '.cal-managed-home';

const ClaudeJson = z.object({ projects: z.record(z.string(), z.record(z.string(), z.unknown())).optional() }).passthrough();

export function claudeConfigDir(env: Record<string, string>): string {
  if (env.CLAUDE_CONFIG_DIR) return env.CLAUDE_CONFIG_DIR;
  return path.join(homeOf(env), '.claude');
}

export function claudeJsonPath(env: Record<string, string>): string {
  if (env.CLAUDE_CONFIG_DIR) return path.join(env.CLAUDE_CONFIG_DIR, '.claude.json');
  return path.join(homeOf(env), '.claude.json');
}

function homeOf(env: Record<string, string>): string {
  const home = env.HOME;
  if (!home) throw new CalError('usage', 'HOME is not set: Claude Code keeps its sessions under $HOME/.claude');
  return home;
}

/** True when cal made this HOME, or this CLAUDE_CONFIG_DIR (`cal model env`), for the scripted model. */
export function isManagedHome(env: Record<string, string>): boolean {
  if (env.CLAUDE_CONFIG_DIR && existsSync(path.join(env.CLAUDE_CONFIG_DIR, MANAGED_HOME_MARKER))) return true;
  return existsSync(path.join(homeOf(env), MANAGED_HOME_MARKER));
}

/** What preAnswerDialogs answers: folder trust (the trust policy's), the rest of a managed home's dialogs (prepare's). */
export interface DialogAnswers {
  trust: boolean;
  managed: boolean;
}

/**
 * Whether Claude Code's interactive TUI trusts `cwd` already: its own entry, or an ancestor's (a
 * trusted parent covers its children, measured: research claude-code.md §2).
 */
export function isFolderTrusted(env: Record<string, string>, cwd: string): boolean {
  const config = readClaudeJson(claudeJsonPath(env));
  if (!config) return false;
  for (let dir = cwd; ; dir = path.dirname(dir)) {
    if (config.projects?.[dir]?.hasTrustDialogAccepted === true) return true;
    if (path.dirname(dir) === dir) return false;
  }
}

function readClaudeJson(file: string): z.infer<typeof ClaudeJson> | null {
  try {
    const parsed = ClaudeJson.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Answers Claude Code's start-up dialogs for `cwd` in its config; whether it had to write anything. */
export async function preAnswerDialogs(env: Record<string, string>, cwd: string, which: DialogAnswers): Promise<boolean> {
  const file = claudeJsonPath(env);
  if (!which.trust && !(which.managed && isManagedHome(env))) return false;
  // Every resumed turn comes here (a structured turn is a launch), and after the first one
  // nothing is left to answer: a read that finds every answer in place writes nothing, so it
  // needs neither the lock nor the write's modules (a CLI writing meanwhile only adds).
  if (alreadyAnswered(env, cwd, file, which)) return false;
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  // A running Claude Code rewrites this file under proper-lockfile's lock `<file>.lock`, re-reading
  // and merging `projects` under it. A write outside that lock can be lost to the CLI's own write
  // (found by cal certify: a second session's trust entry vanished and its pane sat at the trust
  // dialog), so cal takes the same lock.
  // The retries outlast the lock's staleness (10 s): a CLI killed while holding it leaves the
  // lock behind until then.
  // Loaded here, when a launch needs them, not with the adapter on every paste.
  const [{ default: lockfile }, { default: writeFileAtomic }] = await Promise.all([import('proper-lockfile'), import('write-file-atomic')]);
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(file, {
      lockfilePath: `${file}.lock`,
      realpath: false,
      stale: 10_000,
      retries: { retries: 120, minTimeout: 50, maxTimeout: 250 },
      // cal holds the lock for one small write; a lock taken over meanwhile must not crash cal
      // from a timer (the library's default), the write is atomic either way.
      onCompromised: () => undefined,
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ELOCKED') throw err;
    throw new CalError('busy', `Claude Code's config lock ${file}.lock stayed held for over 25 s; retry once the other Claude Code session has settled`);
  }
  try {
    await preAnswerLocked(env, cwd, file, which, writeFileAtomic);
  } finally {
    await release().catch(() => undefined);
  }
  return true;
}

/** Read synchronously: it runs before every resumed launch, and nothing else is waiting meanwhile. */
function alreadyAnswered(env: Record<string, string>, cwd: string, file: string, which: DialogAnswers): boolean {
  const current = readClaudeJson(file);
  if (!current) return false;
  const { changed } = answered(env, cwd, current, which);
  return !changed && (!which.managed || !isManagedHome(env) || existsSync(path.join(claudeConfigDir(env), 'settings.json')));
}

/** ~/.claude.json with every dialog cal pre-answers answered, and whether that changed it. */
function answered(env: Record<string, string>, cwd: string, current: z.infer<typeof ClaudeJson>, which: DialogAnswers): { next: Record<string, unknown>; changed: boolean } {
  const next: Record<string, unknown> = { ...current };
  let changed = false;
  if (which.trust) {
    const projects = { ...(current.projects ?? {}) };
    const entry = projects[cwd] ?? {};
    changed = entry.hasTrustDialogAccepted !== true;
    projects[cwd] = { ...entry, hasTrustDialogAccepted: true };
    next.projects = projects;
  }
  if (which.managed && isManagedHome(env)) {
    // Onboarding, and the auto-mode nudge ("Make auto mode your default permission mode?") that
    // 2.1.328 opens after a first turn in any other mode: each a dialog that would swallow a paste.
    for (const seen of ['hasCompletedOnboarding', 'hasSeenAutoDefaultNudge', 'hasSeenAutoDefaultNotice'] as const) {
      if (next[seen] !== true) {
        next[seen] = true;
        changed = true;
      }
    }
    // Older releases skip the bypass-permissions warning on this global flag only: 2.0.10, 2.0.76
    // and 2.1.29 do not know skipDangerousModePermissionPrompt (2.1.332 knows both).
    if (next.bypassPermissionsModeAccepted !== true) {
      next.bypassPermissionsModeAccepted = true;
      changed = true;
    }
    const key = env.ANTHROPIC_API_KEY;
    if (key) {
      const responses = (next.customApiKeyResponses as { approved?: string[]; rejected?: string[] } | undefined) ?? {};
      const approved = responses.approved ?? [];
      const tail = key.slice(-20);
      if (!approved.includes(tail)) {
        next.customApiKeyResponses = { approved: [...approved, tail], rejected: responses.rejected ?? [] };
        changed = true;
      }
    }
  }
  return { next, changed };
}

async function preAnswerLocked(env: Record<string, string>, cwd: string, file: string, which: DialogAnswers, writeFileAtomic: typeof import('write-file-atomic')): Promise<void> {
  let current: z.infer<typeof ClaudeJson> = {};
  try {
    const parsed = ClaudeJson.safeParse(JSON.parse(await fs.readFile(file, 'utf8')));
    if (!parsed.success) throw new CalError('usage', `${file} is not the JSON Claude Code writes; refusing to rewrite it`);
    current = parsed.data;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const { next, changed } = answered(env, cwd, current, which);
  if (which.managed && isManagedHome(env)) {
    const settingsFile = path.join(claudeConfigDir(env), 'settings.json');
    if (!existsSync(settingsFile)) {
      await fs.mkdir(path.dirname(settingsFile), { recursive: true, mode: 0o700 });
      await writeFileAtomic(settingsFile, JSON.stringify({ skipDangerousModePermissionPrompt: true }, null, 2) + '\n', { mode: 0o600 });
    }
  }
  if (!changed) return;
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await writeFileAtomic(file, JSON.stringify(next, null, 2) + '\n', { mode: 0o600 });
}

/** Creates a HOME cal manages (for demo and certify): everything pre-answered there. */
export async function createManagedHome(dir: string): Promise<void> {
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  await fs.writeFile(path.join(dir, MANAGED_HOME_MARKER), 'This HOME is managed by cal; it may pre-answer CLI dialogs here.\n', { mode: 0o600 });
}

/**
 * The keys that accept the folder-trust dialog on this screen (the answer preAnswerDialogs wrote
 * for the folder), or null when the screen shows none. 2.1.328 lists "No, exit" first, selected,
 * then "Yes, I trust this folder"; 2.0.12 lists "1. Yes, proceed" first (both measured).
 */
export function trustDialogKeys(screen: string): string[] | null {
  return optionKeys(screen, /\btrust\b/i, /^(?:\d+\.\s*)?Yes, (?:I trust this folder|proceed)$/);
}
