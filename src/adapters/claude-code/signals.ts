import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from '../../util/zod.js';

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
  'try{fs.appendFileSync(process.argv[1],JSON.stringify(p)+"\\n",{mode:0o600})}catch{}',
  '});',
].join('');

/** One argument for the POSIX shell Claude Code runs hook commands with. */
export function shellQuote(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/**
 * Claude Code writes a turn's end records (`stop_hook_summary`, `turn_duration`) only once its
 * Stop hooks have returned (measured on 2.1.328: the hook's line lands about 100 ms after the
 * answer, the end records right after it), so the hook's node start is on every turn's way to its
 * end. What only slows that start is cleared for it: NODE_EXTRA_CA_CERTS makes node read a CA
 * bundle first (≈ 80 ms here), and NODE_OPTIONS may preload anything; the program needs neither.
 */
export function hookCommand(signalFile: string, node = process.execPath): string {
  return `NODE_EXTRA_CA_CERTS= NODE_OPTIONS= ${[node, '-e', HOOK_PROGRAM, signalFile].map(shellQuote).join(' ')}`;
}

export function hookSettings(signalFile: string, node = process.execPath): Record<string, unknown> {
  return { hooks: { Stop: [{ hooks: [{ type: 'command', command: hookCommand(signalFile, node) }] }] } };
}

/**
 * Writes the settings file into the session dir (again on every launch: the node running cal may
 * have moved) and returns it and the signal file. The signal file itself is created by the first
 * hook that runs.
 */
export function writeHookSettings(sessionDir: string): { settingsFile: string; signalFile: string } {
  mkdirSync(sessionDir, { recursive: true, mode: 0o700 });
  const signalFile = path.join(sessionDir, SIGNAL_FILE);
  const settingsFile = path.join(sessionDir, SETTINGS_FILE);
  writeFileSync(settingsFile, JSON.stringify(hookSettings(signalFile), null, 2) + '\n', { mode: 0o600 });
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
  const at = p.data.cal_received_at ? Date.parse(p.data.cal_received_at) : NaN;
  return {
    sessionId: p.data.session_id ?? null,
    promptId: p.data.prompt_id ?? null,
    lastAssistantMessage: p.data.last_assistant_message ?? null,
    receivedAt: Number.isNaN(at) ? null : at,
  };
}
