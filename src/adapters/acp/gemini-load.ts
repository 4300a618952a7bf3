import { linkSync, readdirSync, unlinkSync } from 'node:fs';
import path from 'node:path';

/**
 * Gemini CLI 0.61.0's `session/load` first starts a new recording under the loaded session's id,
 * in the file `tmp/<project>/chats/session-<YYYY-MM-DDTHH-mm>-<id's first 8>.jsonl` named by the
 * current minute, and only then reads the session back. Within the minute the session was created
 * that is the session's own file: the load appends a header and an empty history to it, finds no
 * conversation, and fails "No previous sessions found for this project", with the session's file
 * now read as empty for every later resume too (measured: a load 15 s after the first turn).
 * Renamed to the minute before, the file never shares a name with a load's new recording, and
 * Gemini still finds it (it lists every `session-*` file and keeps the newest of an id).
 */
const SESSION_FILE = /^session-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2})-([0-9a-f]{8})\.jsonl$/;

/** `YYYY-MM-DDTHH-mm` of a time (UTC, as Gemini names its session files). */
function minuteStamp(ms: number): string {
  return new Date(ms).toISOString().slice(0, 16).replace(':', '-');
}

function stampTime(stamp: string): number {
  return Date.parse(`${stamp.slice(0, 13)}:${stamp.slice(14)}:00Z`);
}

/**
 * Renames every file of `sessionId` named by the current minute (or a later one) to the minute
 * before, so a load that runs from now on cannot write into it. No-clobber: a name taken stays.
 */
export function keepSessionFileFromLoad(geminiHome: string, sessionId: string, now = Date.now()): string[] {
  const short = sessionId.slice(0, 8);
  const current = minuteStamp(now);
  const moved: string[] = [];
  let projects: string[];
  try {
    projects = readdirSync(path.join(geminiHome, 'tmp'));
  } catch {
    return moved;
  }
  for (const project of projects) {
    const chats = path.join(geminiHome, 'tmp', project, 'chats');
    let files: string[];
    try {
      files = readdirSync(chats);
    } catch {
      continue;
    }
    for (const file of files) {
      const m = SESSION_FILE.exec(file);
      if (!m || m[2] !== short || (m[1] as string) < current) continue;
      const earlier = `session-${minuteStamp(stampTime(m[1] as string) - 60_000)}-${short}.jsonl`;
      try {
        linkSync(path.join(chats, file), path.join(chats, earlier));
        unlinkSync(path.join(chats, file));
        moved.push(earlier);
      } catch {
        // The earlier name is taken (or the file went): Gemini's own outcome stands.
      }
    }
  }
  return moved;
}
