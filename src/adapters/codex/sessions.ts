import { readdirSync, statSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readJsonlFrom } from '../../transcripts/jsonl-tail.js';
import { classifyRecord, isInjectedContext, normaliseForMatch, userMessageText, type SessionMeta } from './rollout.js';

/** Where Codex keeps its state: `$CODEX_HOME`, else `~/.codex`. */
export function codexHome(env: Record<string, string>): string {
  if (env.CODEX_HOME) return path.resolve(env.CODEX_HOME);
  return path.join(env.HOME || os.homedir(), '.codex');
}

const ROLLOUT_NAME = /^rollout-.*-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$/;

/** The session id a rollout file name carries, or null. */
export function sessionIdFromRolloutName(file: string): string | null {
  return ROLLOUT_NAME.exec(path.basename(file))?.[1] ?? null;
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

/**
 * The `sessions/YYYY/MM/DD` folders that can hold a rollout created between `from` and now.
 * Codex names the folder by the thread's creation date; both the local and the UTC calendar
 * day are tried so a time zone never hides a file.
 */
export function dayFolders(home: string, from: Date, to = new Date()): string[] {
  const out = new Set<string>();
  const start = from.getTime() - 24 * 3600_000;
  const end = to.getTime() + 24 * 3600_000;
  for (let t = start; t <= end; t += 12 * 3600_000) {
    const d = new Date(t);
    out.add(path.join(home, 'sessions', String(d.getFullYear()), pad(d.getMonth() + 1), pad(d.getDate())));
    out.add(path.join(home, 'sessions', String(d.getUTCFullYear()), pad(d.getUTCMonth() + 1), pad(d.getUTCDate())));
  }
  return [...out];
}

async function listRollouts(folder: string): Promise<string[]> {
  try {
    return (await fs.readdir(folder)).filter((f) => ROLLOUT_NAME.test(f)).map((f) => path.join(folder, f));
  } catch {
    return [];
  }
}

export interface RolloutHead {
  meta: SessionMeta | null;
  /** The first message a person typed (Codex's own context blocks skipped), or null so far. */
  firstUserMessage: string | null;
}

/** Reads a rollout until its first user message (the head decides whose session it is). */
export async function readRolloutHead(file: string): Promise<RolloutHead> {
  const read = await readJsonlFrom(file, 0, 4 << 20);
  let meta: SessionMeta | null = null;
  for (const rec of read.records) {
    const r = classifyRecord(rec.value);
    if (r.kind === 'session_meta' && !meta) meta = r.meta;
    let text: string | null = null;
    if (r.kind === 'item') text = userMessageText(r.item);
    else if (r.kind === 'user_response_item' && !isInjectedContext(r.text)) text = r.text;
    if (text !== null) return { meta, firstUserMessage: text };
  }
  return { meta, firstUserMessage: null };
}

/** Same folder, by device and inode of the real path (a symlink or other spelling is the same). */
export function sameDir(a: string, b: string): boolean {
  try {
    const sa = statSync(a);
    const sb = statSync(b);
    return sa.dev === sb.dev && sa.ino === sb.ino;
  } catch {
    return path.resolve(a) === path.resolve(b);
  }
}

export interface RolloutCandidate {
  path: string;
  sessionId: string;
}

/**
 * The rollouts written for one first message: created no earlier than `sentAt`, recorded in the
 * same working directory (by filesystem identity), and whose first user message is ours.
 * Never "the newest rollout": a file that does not prove all three is not a candidate.
 */
export async function findRolloutsForFirstMessage(home: string, cwd: string, message: string, sentAt: Date): Promise<RolloutCandidate[]> {
  const needle = normaliseForMatch(message);
  const out: RolloutCandidate[] = [];
  for (const folder of dayFolders(home, sentAt)) {
    for (const file of await listRollouts(folder)) {
      let mtime: number;
      try {
        mtime = (await fs.stat(file)).mtimeMs;
      } catch {
        continue;
      }
      if (mtime < sentAt.getTime()) continue;
      const head = await readRolloutHead(file);
      if (!head.meta || head.firstUserMessage === null) continue;
      const created = Date.parse(head.meta.timestamp);
      if (!Number.isFinite(created) || created < sentAt.getTime()) continue;
      if (!sameDir(head.meta.cwd, cwd)) continue;
      if (normaliseForMatch(head.firstUserMessage) !== needle && !normaliseForMatch(head.firstUserMessage).includes(needle)) continue;
      out.push({ path: file, sessionId: head.meta.id });
    }
  }
  return out;
}

/** The rollout of a known session id: recent day folders first, then the whole sessions tree. */
export async function findRolloutById(home: string, sessionId: string, near: Date): Promise<string | null> {
  for (const folder of dayFolders(home, near)) {
    for (const file of await listRollouts(folder)) if (sessionIdFromRolloutName(file) === sessionId) return file;
  }
  const root = path.join(home, 'sessions');
  const walk = (dir: string, depth: number): string | null => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return null;
    }
    for (const e of entries) {
      const full = path.join(dir, e.name);
      if (e.isDirectory() && depth < 3) {
        const hit = walk(full, depth + 1);
        if (hit) return hit;
      } else if (e.isFile() && sessionIdFromRolloutName(e.name) === sessionId) return full;
    }
    return null;
  };
  return walk(root, 0);
}

/** What the running processes launched by cal hold open, from Linux /proc. */
export interface LaunchScan {
  /** Launch tags of the live processes that carry one. */
  tags: Set<string>;
  /**
   * Rollout file (device:inode) → the launch tags of every process holding it open. Codex opens
   * a rollout other than its own too (reading sessions of the folder), so one file can show
   * under two tags for a moment: only the writer's alone proves it.
   */
  holders: Map<string, Set<string>>;
}

export function fileKey(file: string): string | null {
  try {
    const st = statSync(file);
    return `${st.dev}:${st.ino}`;
  } catch {
    return null;
  }
}

/**
 * Scans the processes that carry a launch tag (`<tagName>=<tag>` in their environment) and the
 * rollout files they hold open (Codex keeps its rollout open while the session lives). Null
 * where /proc cannot tell (not Linux, or a /proc that hides other processes' details).
 */
export async function scanLaunches(tagName: string): Promise<LaunchScan | null> {
  let pids: string[];
  try {
    await fs.access('/proc/self/environ');
    pids = (await fs.readdir('/proc')).filter((p) => /^\d+$/.test(p));
  } catch {
    return null;
  }
  const prefix = `${tagName}=`;
  const scan: LaunchScan = { tags: new Set(), holders: new Map() };
  for (const pid of pids) {
    let environ: string;
    try {
      environ = await fs.readFile(`/proc/${pid}/environ`, 'utf8');
    } catch {
      continue;
    }
    const entry = environ.split('\0').find((e) => e.startsWith(prefix));
    if (!entry) continue;
    const tag = entry.slice(prefix.length);
    scan.tags.add(tag);
    let fds: string[];
    try {
      fds = await fs.readdir(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = await fs.readlink(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      if (!ROLLOUT_NAME.test(path.basename(target))) continue;
      const key = fileKey(target);
      if (!key) continue;
      const tags = scan.holders.get(key) ?? new Set<string>();
      tags.add(tag);
      scan.holders.set(key, tags);
    }
  }
  return scan;
}

/**
 * Picks our rollout among those written for the same first message. When the process cal
 * launched is visible, only the rollout it alone holds open is ours (a lone candidate may be
 * another launch's that happened to be written first, and one our process holds beside another
 * launch is that launch's, read by ours: issue 50 item 11, two starts bound one rollout). Otherwise a lone candidate
 * that no other launch holds is ours, and several are an ambiguity the caller must report.
 */
export function pickRollout(
  candidates: RolloutCandidate[],
  scan: LaunchScan | null,
  tag: string | null,
): { pick: RolloutCandidate | null; ambiguous: boolean } {
  const holders = (c: RolloutCandidate): Set<string> | undefined => {
    const key = fileKey(c.path);
    return key && scan ? scan.holders.get(key) : undefined;
  };
  if (scan && tag && scan.tags.has(tag)) {
    const mine = candidates.filter((c) => {
      const held = holders(c);
      return held?.size === 1 && held.has(tag);
    });
    return { pick: mine.length === 1 ? (mine[0] as RolloutCandidate) : null, ambiguous: false };
  }
  const unclaimed = candidates.filter((c) => holders(c) === undefined);
  if (unclaimed.length === 1) return { pick: unclaimed[0] as RolloutCandidate, ambiguous: false };
  return { pick: null, ambiguous: unclaimed.length > 1 };
}
