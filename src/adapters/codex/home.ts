import { promises as fs } from 'node:fs';
import path from 'node:path';
import { tomlString } from './config.js';

/** The environment variable the scripted provider reads its (dummy) key from. */
export const SCRIPTED_KEY_ENV = 'CAL_SCRIPTED_MODEL_KEY';

/**
 * A config.toml for a throwaway CODEX_HOME that cal creates (demo, certify): a custom Responses
 * provider at the scripted model, no retries (a scripted failure settles at once), no plugin
 * marketplace or analytics traffic, and no approval prompts in a pane nobody watches.
 */
export function scriptedConfigToml(modelUrl: string, keyEnv = SCRIPTED_KEY_ENV): string {
  return [
    'model = "scripted-model"',
    'model_provider = "scripted"',
    'check_for_update_on_startup = false',
    'approval_policy = "never"',
    'sandbox_mode = "workspace-write"',
    '',
    '[model_providers.scripted]',
    'name = "cal scripted model"',
    `base_url = ${tomlString(`${modelUrl.replace(/\/+$/, '')}/v1`)}`,
    'wire_api = "responses"',
    `env_key = ${tomlString(keyEnv)}`,
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
    '[features]',
    'plugins = false',
    'unbounded_connection_retries = false',
    '',
    '[analytics]',
    'enabled = false',
    '',
  ].join('\n');
}

/** Creates `<dir>/codex-home` with the scripted config and returns the environment for it. */
export async function scriptedCodexEnv(dir: string, modelUrl: string, env: Record<string, string>): Promise<Record<string, string>> {
  const home = path.join(dir, 'codex-home');
  await fs.mkdir(home, { recursive: true, mode: 0o700 });
  await fs.writeFile(path.join(home, 'config.toml'), scriptedConfigToml(modelUrl), { mode: 0o600 });
  return { ...env, CODEX_HOME: home, [SCRIPTED_KEY_ENV]: 'scripted' };
}
