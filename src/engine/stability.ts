import { digestHex } from '../util/digest.js';
import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { CalError } from '../errors.js';
import type { DirIdentity, StabilityFingerprint } from '../handles/schema.js';
import { readUserFileSync } from '../util/user-file.js';

/** A folder's identity: the path as given and the device/inode of its real path. */
export function dirIdentity(dir: string): DirIdentity {
  const given = path.resolve(dir);
  let realPath: string;
  try {
    realPath = realpathSync(given);
    const st = statSync(realPath);
    if (!st.isDirectory()) throw new CalError('usage', `${given} is not a directory`);
    return { path: given, realPath, dev: st.dev, ino: st.ino, ...(st.birthtimeMs > 0 ? { birthtimeMs: st.birthtimeMs } : {}) };
  } catch (err) {
    if (err instanceof CalError) throw err;
    throw new CalError('usage', `working directory ${given} does not exist`);
  }
}

export function sha256(text: string): string {
  return digestHex('sha256', text);
}

export async function hashFile(file: string): Promise<string> {
  return sha256(readUserFileSync(file, 'MCP config'));
}

export interface RequestedConfig {
  cwd?: string;
  model?: string;
  systemPrompt?: string;
  mcpConfig?: string;
  toolPolicy?: string;
}

/**
 * `shown`: what the message says instead of the raw expected/actual values (the prompts' first
 * words, the MCP files' paths), where those are hashes no person can compare; the error's
 * fields keep the values either way.
 */
function stale(field: string, expected: unknown, actual: unknown, why: string, shown?: string): CalError {
  return new CalError('stale_handle', `stale handle: ${field} ${why} (${shown ?? `expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`}); start a new session or continue with the original ${field}`, {
    field,
    expected,
    actual,
  });
}

/**
 * Compares a continuation request (and the world as it is now) with the fingerprint recorded
 * at start. Never a silent fresh start: any difference is a stale_handle naming the field.
 */
export async function checkStability(recorded: StabilityFingerprint, requested: RequestedConfig, opts: { workingDir: boolean } = { workingDir: true }): Promise<void> {
  const wd = recorded.workingDir;
  if (opts.workingDir) checkWorkingDir(wd, requested);
  if (requested.model !== undefined && requested.model !== recorded.model) {
    throw stale('model', recorded.model, requested.model, 'differs');
  }
  if (requested.systemPrompt !== undefined && sha256(requested.systemPrompt) !== recorded.systemPromptHash) {
    const shown = recorded.systemPrompt !== null ? `recorded ${JSON.stringify(clip(recorded.systemPrompt))}, got ${JSON.stringify(clip(requested.systemPrompt))}` : undefined;
    throw stale('systemPrompt', recorded.systemPromptHash, sha256(requested.systemPrompt), 'differs', shown);
  }
  if (requested.toolPolicy !== undefined && requested.toolPolicy !== recorded.toolPolicy) {
    throw stale('toolPolicy', recorded.toolPolicy, requested.toolPolicy, 'differs');
  }
  if (requested.mcpConfig !== undefined) {
    const asked = await hashFile(requested.mcpConfig);
    if (asked !== recorded.mcpConfigHash) {
      const shown = `recorded ${recorded.mcpConfigPath ?? 'none'}${recorded.mcpConfigHash ? ` (sha256 ${recorded.mcpConfigHash.slice(0, 12)}…)` : ''}, got ${path.resolve(requested.mcpConfig)} (sha256 ${asked.slice(0, 12)}…)`;
      throw stale('mcpConfig', recorded.mcpConfigHash, asked, 'differs', shown);
    }
  }
  if (recorded.mcpConfigPath) {
    let current: string;
    try {
      current = await hashFile(recorded.mcpConfigPath);
    } catch {
      current = 'missing';
    }
    if (current !== recorded.mcpConfigHash) {
      const shown = current === 'missing' ? 'it is gone' : `sha256 ${recorded.mcpConfigHash?.slice(0, 12)}… when the session started, ${current.slice(0, 12)}… now`;
      throw stale('mcpConfig', recorded.mcpConfigHash, current, `file ${recorded.mcpConfigPath} changed`, shown);
    }
  }
}

function clip(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 60 ? `${line.slice(0, 60)}…` : line;
}

/** The folder must still be the same one (device and inode of its real path), and so must --cwd. */
function checkWorkingDir(wd: DirIdentity, requested: RequestedConfig): void {
  let now: DirIdentity | null = null;
  try {
    now = dirIdentity(wd.path);
  } catch {
    now = null;
  }
  if (!now || !sameDir(now, wd)) {
    throw stale('workingDir', `${wd.realPath} (inode ${wd.ino})`, now ? `${now.realPath} (inode ${now.ino})` : 'missing', 'was moved, deleted or recreated');
  }
  if (requested.cwd !== undefined) {
    let asked: DirIdentity;
    try {
      asked = dirIdentity(requested.cwd);
    } catch {
      throw stale('workingDir', wd.realPath, path.resolve(requested.cwd), 'differs');
    }
    if (!sameDir(asked, wd)) throw stale('workingDir', wd.realPath, asked.realPath, 'differs');
  }
}

/** Device and inode, and the birth time where both sides know it (an inode can be handed out again). */
function sameDir(a: DirIdentity, b: DirIdentity): boolean {
  if (a.dev !== b.dev || a.ino !== b.ino) return false;
  return a.birthtimeMs === undefined || b.birthtimeMs === undefined || a.birthtimeMs === b.birthtimeMs;
}
