import { existsSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { CalError } from '../../errors.js';
import { MANAGED_HOME_MARKER } from '../claude-code/home.js';
import type { ScriptedEnvOptions } from '../types.js';

/**
 * Where Qwen Code keeps its configuration and sessions (measured on 0.24.4, docs/qwen.md):
 * `$QWEN_HOME` when set (the `.qwen` folder itself, not its parent), else `$HOME/.qwen`. Session
 * data (`projects/`, `tmp/`, `debug/`) goes under `$QWEN_RUNTIME_DIR` instead when that is set.
 */
export function qwenDir(env: Record<string, string>): string {
  if (env.QWEN_HOME) return path.resolve(env.QWEN_HOME);
  if (!env.HOME) throw new CalError('usage', 'neither QWEN_HOME nor HOME is set: Qwen Code cannot find its settings and sessions');
  return path.join(env.HOME, '.qwen');
}

/** The folder Qwen keeps runtime output in: sessions live in `<it>/projects/<cwd slug>/chats/`. */
export function qwenRuntimeDir(env: Record<string, string>): string {
  return env.QWEN_RUNTIME_DIR ? path.resolve(env.QWEN_RUNTIME_DIR) : qwenDir(env);
}

/** Qwen's project slug: every character of the working directory that is not [A-Za-z0-9] becomes '-'. */
export function projectSlug(cwd: string): string {
  return cwd.replace(/[^a-zA-Z0-9]/g, '-');
}

/** `<runtime>/projects/<slug>/chats/<id>.jsonl`: the session file of one id in one working directory. */
export function sessionFilePath(env: Record<string, string>, cwd: string, sessionId: string): string {
  return path.join(qwenRuntimeDir(env), 'projects', projectSlug(cwd), 'chats', `${sessionId}.jsonl`);
}

/** The model name cal's throwaway homes configure (the scripted model answers any). */
export const SCRIPTED_MODEL = 'scripted-model';

/**
 * The settings of a Qwen home cal manages (demo, certify, tests): the OpenAI-compatible auth
 * (the key and base URL come from the environment), no update check, no SDK-level retries (a
 * failing request is tried 7 times by Qwen's own loop, which no setting shortens), and the
 * "Auto mode enabled" notice acknowledged, the classic approval mode with shell commands allowed. Nothing of this is written into a user's own home.
 */
export function scriptedSettings(): Record<string, unknown> {
  return {
    security: { auth: { selectedType: 'openai' } },
    general: { enableAutoUpdate: false },
    model: { generationConfig: { maxRetries: 0 } },
    privacy: { usageStatisticsEnabled: false },
    ui: { autoModeAcknowledged: true },
    // Qwen's default "auto" mode asks a model classifier about each tool call, and a model that
    // cannot classify (the scripted one) leaves a confirmation dialog up (measured: `sleep`) in a
    // pane nobody watches, whatever the allow rules: the classic mode, with shell commands allowed
    // as Gemini's home allows its shell tool.
    tools: { approvalMode: 'default' },
    permissions: { allow: ['ShellTool'] },
  };
}

/** True when the Qwen home in this environment is a throwaway one cal made (scriptedQwenEnv). */
export function isManagedQwenHome(env: Record<string, string>): boolean {
  return existsSync(path.join(qwenDir(env), MANAGED_HOME_MARKER));
}

/**
 * Creates `<dir>/qwen-home/.qwen/settings.json` and returns the environment for it: HOME is that
 * folder, or (`keepHome`, for a user's shell) HOME stays and QWEN_HOME names the `.qwen` folder.
 */
export async function scriptedQwenEnv(dir: string, modelUrl: string, env: Record<string, string>, opts: ScriptedEnvOptions = {}): Promise<Record<string, string>> {
  const home = path.join(dir, 'qwen-home');
  const qwen = path.join(home, '.qwen');
  await fs.mkdir(qwen, { recursive: true, mode: 0o700 });
  await fs.writeFile(path.join(qwen, MANAGED_HOME_MARKER), 'This Qwen home is managed by cal.\n', { mode: 0o600 });
  await fs.writeFile(path.join(qwen, 'settings.json'), `${JSON.stringify(scriptedSettings(), null, 2)}\n`, { mode: 0o600 });
  const out: Record<string, string> = {
    ...env,
    ...(opts.keepHome ? { QWEN_HOME: qwen } : { HOME: home }),
    OPENAI_BASE_URL: `${modelUrl}/v1`,
    OPENAI_API_KEY: 'cal-scripted-model',
    OPENAI_MODEL: SCRIPTED_MODEL,
  };
  if (!opts.keepHome) delete out.QWEN_HOME;
  // A user's runtime folder or system settings must never mix into the scripted model's runs.
  delete out.QWEN_RUNTIME_DIR;
  delete out.QWEN_CODE_SYSTEM_SETTINGS_PATH;
  delete out.QWEN_CODE_SYSTEM_DEFAULTS_PATH;
  delete out.QWEN_DEFAULT_AUTH_TYPE;
  return out;
}
