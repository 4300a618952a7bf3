import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { envName, type OpencodeFlavour } from './flavour.js';

/**
 * Where OpenCode (1.18.33) keeps its data and configuration, and the managed configuration cal
 * writes for its scripted model (docs/opencode.md). Measured: sessions live in the SQLite file
 * `$XDG_DATA_HOME/opencode/opencode.db` (`opencode db path`), else `~/.local/share/opencode/…`;
 * Kilo Code CLI keeps the same layout under its own names (`kilo/kilo.db`, docs/kilo.md).
 */
export function dataDir(flavour: OpencodeFlavour, env: Record<string, string>): string {
  const base = env.XDG_DATA_HOME ? path.resolve(env.XDG_DATA_HOME) : path.join(env.HOME || os.homedir(), '.local', 'share');
  return path.join(base, flavour.folder);
}

/** The provider and model names of the managed configuration. */
export const SCRIPTED_PROVIDER = 'scripted';
export const SCRIPTED_MODEL = 'scripted-model';

/**
 * A throwaway home at `<dir>/<flavour's home folder>`: its config (`OPENCODE_CONFIG`, or the
 * flavour's own variable) has one provider through the bundled `@ai-sdk/openai-compatible`
 * package (nothing is downloaded) at the scripted model's `/v1`, that model as `model` and
 * `small_model` (so the title request goes there too), no autoupdate and no sharing. XDG data,
 * config, state and cache dirs live inside it, so the session store is the managed one.
 * `keepHome` leaves HOME alone (a user's shell).
 */
export async function scriptedEnv(flavour: OpencodeFlavour, dir: string, modelUrl: string, env: Record<string, string>, keepHome = false): Promise<Record<string, string>> {
  const home = path.join(dir, flavour.homeFolder);
  const xdg = {
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
  };
  for (const d of Object.values(xdg)) await fs.mkdir(path.join(d, flavour.folder), { recursive: true, mode: 0o700 });
  const config = {
    $schema: flavour.configSchema,
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
  const configFile = path.join(xdg.XDG_CONFIG_HOME, flavour.folder, flavour.configFile);
  await fs.writeFile(configFile, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
  const configVar = envName(flavour, 'CONFIG');
  // A user's shell keeps its own XDG dirs (every program reads them): only the config is cal's.
  if (keepHome) return { ...env, ...flavour.quietEnv, [configVar]: configFile };
  return { ...env, ...xdg, ...flavour.quietEnv, [configVar]: configFile, HOME: home };
}
