import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Where Cline CLI (3.0.65) keeps its state, as its storage code resolves it: the config folder
 * `CLINE_DIR` (default `~/.cline`), the data folder `CLINE_DATA_DIR` (default `<config>/data`),
 * and in it `settings/providers.json` (the provider `cline auth` configures), `sessions/<id>/`
 * (`<id>.json`, the session's manifest, and `<id>.messages.json`, its conversation) and
 * `db/sessions.db`. docs/cline.md has the measurements.
 */
export function clineConfigDir(env: Record<string, string>): string {
  return env.CLINE_DIR ? path.resolve(env.CLINE_DIR) : path.join(env.HOME || os.homedir(), '.cline');
}

export function clineDataDir(env: Record<string, string>): string {
  return env.CLINE_DATA_DIR ? path.resolve(env.CLINE_DATA_DIR) : path.join(clineConfigDir(env), 'data');
}

/** The folder of Cline's sessions for every launch cal makes (each names its data folder). */
export function clineSessionsDir(env: Record<string, string>): string {
  return path.join(clineDataDir(env), 'sessions');
}

/**
 * What every launch of Cline gets from cal, none of it written into the user's files:
 * - `CLINE_NO_AUTO_UPDATE`: a pinned release never installs a newer one of itself at start;
 * - `CLINE_DISABLE_CLINE_PASS_NOTICE`: the "Try ClinePass" dialog, shown once over the first
 *   turn of a TUI and closed by any key, would take the first key of a paste;
 * - `CLINE_SESSION_BACKEND_MODE=local`: the session runs in the launched process, never in the
 *   shared hub daemon Cline otherwise starts in the background (measured: `cline
 *   --cline-hub-daemon` outlives the turn, and the pane's).
 */
export const CLINE_QUIET_ENV: Record<string, string> = {
  CLINE_NO_AUTO_UPDATE: '1',
  CLINE_DISABLE_CLINE_PASS_NOTICE: '1',
  CLINE_SESSION_BACKEND_MODE: 'local',
};

export const SCRIPTED_MODEL = 'scripted-model';

/**
 * A throwaway home for Cline at `<dir>/cline-home` (or, for a user's shell with `keepHome`, only
 * its config folder `CLINE_DIR` at `<dir>/cline`), whose providers.json selects Cline's
 * OpenAI-compatible provider at the scripted model's `/v1`: what `cline auth -p openai -k dummy
 * -m scripted-model -b <url>/v1` writes (measured), written directly so no CLI runs for it.
 */
export async function scriptedClineEnv(dir: string, modelUrl: string, env: Record<string, string>, keepHome: boolean): Promise<Record<string, string>> {
  const home = path.join(dir, 'cline-home');
  const out: Record<string, string> = keepHome ? { ...env, CLINE_DIR: path.join(dir, 'cline') } : { ...env, HOME: home };
  if (!keepHome) delete out.CLINE_DIR;
  delete out.CLINE_DATA_DIR;
  const settings = path.join(clineDataDir(out), 'settings');
  await fs.mkdir(settings, { recursive: true, mode: 0o700 });
  const providers = {
    version: 1,
    lastUsedProvider: 'openai-compatible',
    modes: {},
    providers: {
      'openai-compatible': {
        settings: { provider: 'openai-compatible', apiKey: 'cal-scripted-model', model: SCRIPTED_MODEL, baseUrl: `${modelUrl.replace(/\/+$/, '')}/v1` },
        updatedAt: new Date().toISOString(),
        tokenSource: 'manual',
      },
    },
  };
  await fs.writeFile(path.join(settings, 'providers.json'), `${JSON.stringify(providers, null, 2)}\n`, { mode: 0o600 });
  // Cline's ACP mode takes its provider only from these (index.ts); the key is the scripted model's dummy.
  return { ...out, CLINE_NO_AUTO_UPDATE: '1', CLINE_PROVIDER: 'openai-compatible', CLINE_MODEL: SCRIPTED_MODEL, CLINE_API_KEY: 'cal-scripted-model' };
}
