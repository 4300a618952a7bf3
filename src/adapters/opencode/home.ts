import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Where OpenCode (1.18.33) keeps its data and configuration, and the managed configuration cal
 * writes for its scripted model (docs/opencode.md). Measured: sessions live in the SQLite file
 * `$XDG_DATA_HOME/opencode/opencode.db` (`opencode db path`), else `~/.local/share/opencode/…`.
 */
export function opencodeDataDir(env: Record<string, string>): string {
  const base = env.XDG_DATA_HOME ? path.resolve(env.XDG_DATA_HOME) : path.join(env.HOME || os.homedir(), '.local', 'share');
  return path.join(base, 'opencode');
}

export function opencodeDatabase(env: Record<string, string>): string {
  return path.join(opencodeDataDir(env), 'opencode.db');
}

/** The provider and model names of the managed configuration. */
export const SCRIPTED_PROVIDER = 'scripted';
export const SCRIPTED_MODEL = 'scripted-model';

/**
 * The environment every OpenCode launch gets: no self-update, and no model catalogue fetched from
 * the network at start (it is not needed for a configured provider and hangs an offline machine).
 */
export const OPENCODE_QUIET_ENV: Record<string, string> = {
  OPENCODE_DISABLE_AUTOUPDATE: '1',
  OPENCODE_DISABLE_MODELS_FETCH: '1',
};

/**
 * A throwaway home for OpenCode at `<dir>/opencode-home`: its config (`OPENCODE_CONFIG`) has one
 * provider through the bundled `@ai-sdk/openai-compatible` package (nothing is downloaded) at the
 * scripted model's `/v1`, that model as `model` and `small_model` (so the title request goes
 * there too), no autoupdate and no sharing. XDG data, config, state and cache dirs live inside it,
 * so the session store is the managed one. `keepHome` leaves HOME alone (a user's shell).
 */
export async function scriptedOpencodeEnv(dir: string, modelUrl: string, env: Record<string, string>, keepHome = false): Promise<Record<string, string>> {
  const home = path.join(dir, 'opencode-home');
  const xdg = {
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
  };
  for (const d of Object.values(xdg)) await fs.mkdir(path.join(d, 'opencode'), { recursive: true, mode: 0o700 });
  const config = {
    $schema: 'https://opencode.ai/config.json',
    provider: {
      [SCRIPTED_PROVIDER]: {
        npm: '@ai-sdk/openai-compatible',
        name: 'cal scripted model',
        options: { baseURL: `${modelUrl.replace(/\/+$/, '')}/v1`, apiKey: 'cal-scripted-model' },
        models: { [SCRIPTED_MODEL]: { name: SCRIPTED_MODEL } },
      },
    },
    model: `${SCRIPTED_PROVIDER}/${SCRIPTED_MODEL}`,
    small_model: `${SCRIPTED_PROVIDER}/${SCRIPTED_MODEL}`,
    autoupdate: false,
    share: 'disabled',
  };
  const configFile = path.join(xdg.XDG_CONFIG_HOME, 'opencode', 'opencode.json');
  await fs.writeFile(configFile, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
  // A user's shell keeps its own XDG dirs (every program reads them): only the config is cal's.
  if (keepHome) return { ...env, ...OPENCODE_QUIET_ENV, OPENCODE_CONFIG: configFile };
  return { ...env, ...xdg, ...OPENCODE_QUIET_ENV, OPENCODE_CONFIG: configFile, HOME: home };
}
