/**
 * What differs between OpenCode and a CLI built on it that keeps its store, flags and quirks
 * (Kilo Code CLI, src/adapters/kilo/): names and paths only. Every part of this folder that
 * touches a name or a path takes the flavour, so both adapters run one implementation
 * (docs/opencode.md, docs/kilo.md).
 */
export interface OpencodeFlavour {
  /** cal's provider name (the mirror's kind is `<provider>-mirror`). */
  readonly provider: 'opencode' | 'kilo';
  /** The CLI's name in cal's messages. */
  readonly label: string;
  /** Its command in cal's messages (`opencode db`, `kilo import`). */
  readonly command: string;
  /** Its folder under each XDG base directory (data, config, state, cache). */
  readonly folder: string;
  /** Its SQLite store, in the data folder (`<command> db path` names it). */
  readonly database: string;
  /** The file name of the configuration cal writes for its scripted model. */
  readonly configFile: string;
  /** `$schema` of that configuration. */
  readonly configSchema: string;
  /** The prefix of its variables: `<prefix>_CONFIG`, `_CONFIG_CONTENT`, `_DB`, `_DISABLE_CHANNEL_DB`. */
  readonly envPrefix: string;
  /**
   * Variables every launch gets: no self-update, no model catalogue fetched from the network at
   * start (not needed for a configured provider, and it hangs an offline machine), and whatever
   * else the CLI would reach out for.
   */
  readonly quietEnv: Readonly<Record<string, string>>;
  /** The folder `cal model serve`'s managed home goes in, under the directory it is given. */
  readonly homeFolder: string;
}

export const OPENCODE: OpencodeFlavour = {
  provider: 'opencode',
  label: 'OpenCode',
  command: 'opencode',
  folder: 'opencode',
  database: 'opencode.db',
  configFile: 'opencode.json',
  configSchema: 'https://opencode.ai/config.json',
  envPrefix: 'OPENCODE',
  quietEnv: { OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_MODELS_FETCH: '1' },
  homeFolder: 'opencode-home',
};

type EnvSuffix = 'CONFIG' | 'CONFIG_CONTENT' | 'DB' | 'DISABLE_CHANNEL_DB';

/** One of the flavour's own variables (`OPENCODE_CONFIG_CONTENT`, `KILO_CONFIG_CONTENT`, …). */
export function envName(flavour: OpencodeFlavour, suffix: EnvSuffix): string {
  return `${flavour.envPrefix}_${suffix}`;
}

/** The kind of cal's mirror of a session of this flavour (store.ts). */
export function mirrorKind(flavour: OpencodeFlavour): `${OpencodeFlavour['provider']}-mirror` {
  return `${flavour.provider}-mirror`;
}

/** The variables a user sets to point the CLI at another config or store (the adapter's envNames). */
export function userEnvNames(flavour: OpencodeFlavour): string[] {
  return ['HOME', 'XDG_DATA_HOME', 'XDG_CONFIG_HOME', envName(flavour, 'CONFIG'), envName(flavour, 'CONFIG_CONTENT'), envName(flavour, 'DB')];
}
