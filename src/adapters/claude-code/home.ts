import { existsSync, readFileSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { CalError } from '../../errors.js';
import { z } from '../../util/zod.js';

/**
 * Pre-answers Claude Code's startup dialogs (research: claude-code.md §2).
 *
 * In the user's own config cal writes one thing: `projects["<real cwd>"].hasTrustDialogAccepted`.
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

/** Answers Claude Code's start-up dialogs for `cwd` in its config; whether it had to write anything. */
export async function preAnswerDialogs(env: Record<string, string>, cwd: string): Promise<boolean> {
  const file = claudeJsonPath(env);
  // Every resumed turn comes here (a structured turn is a launch), and after the first one
  // nothing is left to answer: a read that finds every answer in place writes nothing, so it
  // needs neither the lock nor the write's modules (a CLI writing meanwhile only adds).
  if (alreadyAnswered(env, cwd, file)) return false;
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
    await preAnswerLocked(env, cwd, file, writeFileAtomic);
  } finally {
    await release().catch(() => undefined);
  }
  return true;
}

/** Read synchronously: it runs before every resumed launch, and nothing else is waiting meanwhile. */
function alreadyAnswered(env: Record<string, string>, cwd: string, file: string): boolean {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return false;
  }
  let parsed;
  try {
    parsed = ClaudeJson.safeParse(JSON.parse(text));
  } catch {
    return false;
  }
  if (!parsed.success) return false;
  const { changed } = answered(env, cwd, parsed.data);
  return !changed && (!isManagedHome(env) || existsSync(path.join(claudeConfigDir(env), 'settings.json')));
}

/** ~/.claude.json with every dialog cal pre-answers answered, and whether that changed it. */
function answered(env: Record<string, string>, cwd: string, current: z.infer<typeof ClaudeJson>): { next: Record<string, unknown>; changed: boolean } {
  const next: Record<string, unknown> = { ...current };
  const projects = { ...(current.projects ?? {}) };
  const entry = projects[cwd] ?? {};
  let changed = entry.hasTrustDialogAccepted !== true;
  projects[cwd] = { ...entry, hasTrustDialogAccepted: true };
  next.projects = projects;
  if (isManagedHome(env)) {
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

async function preAnswerLocked(env: Record<string, string>, cwd: string, file: string, writeFileAtomic: typeof import('write-file-atomic')): Promise<void> {
  let current: z.infer<typeof ClaudeJson> = {};
  try {
    const parsed = ClaudeJson.safeParse(JSON.parse(await fs.readFile(file, 'utf8')));
    if (!parsed.success) throw new CalError('usage', `${file} is not the JSON Claude Code writes; refusing to rewrite it`);
    current = parsed.data;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const { next, changed } = answered(env, cwd, current);
  if (isManagedHome(env)) {
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

/** A screen row without the dialog box's side borders (2.0.x draws `│` on both sides). */
const rowText = (line: string) => line.replace(/^\s*│/, '').replace(/│\s*$/, '').trim();

/**
 * The keys that accept the folder-trust dialog on this screen (the answer preAnswerDialogs wrote
 * for the folder), or null when the screen shows none. The options are rows of their own, the
 * selected one opening with `❯`: 2.1.328 lists "No, exit" first, selected, then "Yes, I trust
 * this folder"; 2.0.12 lists "1. Yes, proceed" first (both measured). So the keys move from the
 * selected row to the Yes row, then Enter.
 */
export function trustDialogKeys(screen: string): string[] | null {
  const rows = screen.split('\n').map(rowText);
  if (!rows.some((row) => /\btrust\b/i.test(row))) return null;
  const yes = rows.findIndex((row) => /^(?:❯\s*)?(?:\d+\.\s*)?Yes, (?:I trust this folder|proceed)$/.test(row));
  if (yes < 0) return null;
  // The selected option is within the few rows of the option list, not the prompt box elsewhere.
  const near = [-3, -2, -1, 0, 1, 2, 3].map((d) => yes + d).filter((i) => rows[i]?.startsWith('❯') && /^❯\s*(?:\d+\.\s*)?(?:Yes|No)\b/.test(rows[i] ?? ''));
  const selected = near[0];
  if (selected === undefined) return null;
  const moves = yes - selected;
  return [...Array<string>(Math.abs(moves)).fill(moves > 0 ? 'Down' : 'Up'), 'Enter'];
}
