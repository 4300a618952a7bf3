import path from 'node:path';
import { ensurePlainDirSync, touchPlainFileSync, writePlainFileSync } from '../../util/private-file.js';
import { z } from '../../util/zod.js';
import { compareVersions } from '../versions.js';

/**
 * Claude Code's second end-of-turn signal: a Stop hook given per launch through `--settings
 * <file in the handle's session dir>` (merged with the user's settings, never written into
 * them), whose command appends its stdin payload as one JSON line to a signal file that the
 * engine tails beside the transcript.
 *
 * Only `Stop` is hooked. Measured on 2.0.10 … 2.1.332: Stop fires once per finished turn (also
 * after an API error) and its payload names the session (`session_id`); 2.1.332 also names the
 * prompt (`prompt_id`, the transcript's `promptId`) and carries the final text
 * (`last_assistant_message`), 2.1.29 and older do neither. An event name a release does not know
 * makes it reject the whole settings file with a blocking "Settings Error" dialog (2.1.29 on
 * `StopFailure`), and a UserPromptSubmit hook would hold every prompt for a node start; a prompt
 * blocked by the user's own hook is already in the transcript (records.ts), so neither is hooked.
 */
export const SETTINGS_FILE = 'claude-settings.json';
export const SIGNAL_FILE = 'claude-signals.jsonl';

/**
 * The hook command's program (CommonJS for `node -e`): reads the payload, adds the time it was
 * received (releases that send no prompt id have the observer order a Stop against the turn's
 * user record by time), and appends it in one write. It never fails the hook: a missing
 * folder must not put an error in the user's pane.
 */
const HOOK_PROGRAM = [
  'const fs=require("fs");let d="";',
  'process.stdin.setEncoding("utf8");',
  'process.stdin.on("data",c=>{d+=c}).on("end",()=>{',
  'let p=null;try{p=JSON.parse(d)}catch{}',
  'if(typeof p!=="object"||p===null||Array.isArray(p))p={unparsed:d.slice(0,4096)};',
  'p.cal_received_at=new Date().toISOString();',
  'try{const k=fs.constants,f=fs.openSync(process.argv[1],k.O_WRONLY|k.O_APPEND|k.O_CREAT|k.O_NOFOLLOW|k.O_NONBLOCK,0o600);try{if(fs.fstatSync(f).isFile())fs.writeSync(f,JSON.stringify(p)+"\\n")}finally{fs.closeSync(f)}}catch{}',
  '});',
].join('');

/** One argument for the POSIX shell Claude Code runs hook commands with. */
export function shellQuote(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/**
 * Claude Code writes a turn's end records (`stop_hook_summary`, `turn_duration`) only once its
 * Stop hooks have returned (measured on 2.1.328: the hook's line lands about 100 ms after the
 * answer, the end records right after it), so the hook's own start is on every turn's way to its
 * end. What only slows node's start is cleared for it: NODE_EXTRA_CA_CERTS makes node read a CA
 * bundle first (≈ 80 ms here), and NODE_OPTIONS may preload anything; the program needs neither.
 */
export function nodeHookCommand(signalFile: string, node = process.execPath): string {
  return `NODE_EXTRA_CA_CERTS= NODE_OPTIONS= ${[node, '-e', HOOK_PROGRAM, signalFile].map(shellQuote).join(' ')}`;
}

/**
 * The same signal from the shell alone, with no node to start: Claude Code 2.1.328 reached its
 * end records about 100 ms sooner per turn with it than with the node hook (A/B, 6 rounds each,
 * medians 1.93 s against 2.03 s from launch to `turn_duration`; 1.85 s with no hook at all).
 * The payload (one JSON object; line breaks, which JSON only has between tokens, are dropped) gets
 * `cal_received_at` added before its closing brace. POSIX `date` tells the time to the second
 * only, which the parser reads as the end of that second, so a wait counted from it never ends
 * early. A payload that is not an object makes a line the reader skips; the hook itself never
 * fails (a folder that is gone), and the signal file is the owner's alone (umask).
 */
export function shellHookCommand(signalFile: string): string {
  return [
    'umask 077',
    "p=$(tr -d '\\n\\r')",
    't=$(date -u +%Y-%m-%dT%H:%M:%SZ)',
    // A link (or anything but a file) planted in the signal file's place is not appended
    // through (cal created the file plain before the launch; the shell has no O_NOFOLLOW, so it
    // looks first: a link planted in the instant between its look and its write is the limit).
    `{ [ -L ${shellQuote(signalFile)} ] || { [ -e ${shellQuote(signalFile)} ] && [ ! -f ${shellQuote(signalFile)} ]; } || printf '%s,"cal_received_at":"%s"}\\n' "\${p%\\}*}" "$t" >> ${shellQuote(signalFile)}; } 2>/dev/null`,
    'exit 0',
  ].join('; ');
}

/**
 * The first release that names the prompt in its Stop payload (`prompt_id`), bisected over every
 * published release (2.1.195 sends none; the transcript's own `promptId` came earlier, in 2.1.73),
 * and it writes `stop_hook_summary` too. There a Stop is matched to its turn by id and the summary
 * ends the turn, so the signal's time only bounds the fallback waits (65 s, 5 s), and the shell
 * hook's second is enough. Older releases order a Stop against the turn's user record by time, to
 * the millisecond: the node hook. (The shell hook ran start, paste, kill-tmux, resume and recall
 * on every release probed, 2.1.67 to 2.1.328, with or without the prompt id.)
 */
export const SHELL_HOOK_SINCE = '2.1.196';

/** The Stop hook command for a release (node's for any release that is not a plain number). */
export function hookCommand(signalFile: string, version: string, node = process.execPath): string {
  return atLeast(version, SHELL_HOOK_SINCE) ? shellHookCommand(signalFile) : nodeHookCommand(signalFile, node);
}

/**
 * The first release whose hook is run in the background (`async: true`, "runs in background
 * without blocking" in its settings schema, also in 2.1.332): Claude no longer waits for cal's
 * hook before it writes the turn's end records. A/B on 2.1.328 in a pane, launch to
 * `turn_duration`, 10 rounds each: 1222 ms with the blocking hook, 1109 ms with it in the
 * background, 1085 ms with no hook; the signal still came for every turn, and
 * `stop_hook_summary` is still written. The signal stays the second end-of-turn signal (the
 * transcript's end records are the first); a user's own Stop hooks still block as they would.
 * Older releases keep the blocking hook: how their settings schema takes an unknown key was not
 * probed, and a refused settings file is a blocking dialog.
 */
export const ASYNC_HOOK_SINCE = '2.1.328';

function atLeast(version: string, floor: string): boolean {
  try {
    return compareVersions(version, floor) >= 0;
  } catch {
    // not a release number: what works on every release
    return false;
  }
}

export function hookSettings(signalFile: string, version: string, node = process.execPath): Record<string, unknown> {
  const hook = { type: 'command', command: hookCommand(signalFile, version, node), ...(atLeast(version, ASYNC_HOOK_SINCE) ? { async: true } : {}) };
  return { hooks: { Stop: [{ hooks: [hook] }] } };
}

/**
 * Writes the settings file into the session dir (again on every launch: the node running cal may
 * have moved) and returns it and the signal file. The signal file itself is created by the first
 * hook that runs.
 */
export function writeHookSettings(sessionDir: string, version: string): { settingsFile: string; signalFile: string } {
  // Nothing is written through a link planted in the state directory: the session dir itself,
  // the settings file or the signal file (created plain here, so the hook appends to it only).
  ensurePlainDirSync(sessionDir, path.dirname(sessionDir));
  const signalFile = path.join(sessionDir, SIGNAL_FILE);
  const settingsFile = path.join(sessionDir, SETTINGS_FILE);
  writePlainFileSync(settingsFile, JSON.stringify(hookSettings(signalFile, version), null, 2) + '\n');
  touchPlainFileSync(signalFile);
  return { settingsFile, signalFile };
}

/** A Stop payload as the hook appends it (only the fields cal relies on). */
const StopSignal = z
  .object({
    hook_event_name: z.literal('Stop'),
    session_id: z.string().optional(),
    prompt_id: z.string().optional(),
    last_assistant_message: z.string().nullable().optional(),
    cal_received_at: z.string().optional(),
  })
  .passthrough();

export interface StopSignal {
  sessionId: string | null;
  promptId: string | null;
  lastAssistantMessage: string | null;
  /** When the hook ran (ms since the epoch), or null when the line carries no time. */
  receivedAt: number | null;
}

/** The Stop signal a signal-file record stands for, or null for any other record. */
export function parseStopSignal(value: unknown): StopSignal | null {
  const p = StopSignal.safeParse(value);
  if (!p.success) return null;
  const stamp = p.data.cal_received_at;
  let at = stamp ? Date.parse(stamp) : NaN;
  // A time to the second (the shell hook's): the hook ran before the end of that second.
  if (stamp && /:\d\d(?:Z|[+-]\d\d:\d\d)$/.test(stamp)) at += 999;
  return {
    sessionId: p.data.session_id ?? null,
    promptId: p.data.prompt_id ?? null,
    lastAssistantMessage: p.data.last_assistant_message ?? null,
    receivedAt: Number.isNaN(at) ? null : at,
  };
}
