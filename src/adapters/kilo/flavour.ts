import type { OpencodeFlavour } from '../opencode/flavour.js';

/**
 * Kilo Code CLI's names for OpenCode's paths and variables (7.7.7, measured: `kilo db path`,
 * its config loader's log lines, the variable names in the binary). Its store keeps OpenCode's
 * tables and id forms (`ses_…`), its log is still `<data>/log/opencode.log`, and it reads
 * `kilo.json(c)` and `opencode.json(c)` in `$XDG_CONFIG_HOME/kilo`.
 */
export const KILO: OpencodeFlavour = {
  provider: 'kilo',
  label: 'Kilo Code CLI',
  command: 'kilo',
  folder: 'kilo',
  database: 'kilo.db',
  configFile: 'kilo.json',
  configSchema: 'https://app.kilo.ai/config.json',
  envPrefix: 'KILO',
  quietEnv: {
    KILO_DISABLE_AUTOUPDATE: '1',
    KILO_DISABLE_MODELS_FETCH: '1',
    // Kilo sends PostHog telemetry unless this is set to something other than "all", and every
    // process waited 2 s on exit for it offline ("Timeout while shutting down PostHog"): each
    // `kilo db` / `kilo import` cal runs is such a process.
    KILO_TELEMETRY_LEVEL: 'off',
  },
  homeFolder: 'kilo-home',
};
