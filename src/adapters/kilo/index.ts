import type { PinnedCli } from '../../handles/schema.js';
import { findExecutable, pinCli } from '../resolve.js';
import { pinSupported, type SupportedVersions } from '../versions.js';
import type { CliAdapter } from '../types.js';
import { opencodeFamily } from '../opencode/family.js';
import { inputBoxReader } from '../opencode/input-box.js';
import { kiloVersion, nativeKiloBinary } from './binary.js';
import { KILO } from './flavour.js';
import { kiloMessageGuard } from './message-guard.js';

/**
 * Kilo Code CLI (`@kilocode/cli`, binary `kilo`), measured on 7.7.7 (docs/kilo.md). It is
 * OpenCode underneath and keeps OpenCode's store, flags and quirks under its own names and paths
 * (flavour.ts): its sessions, store reads, mirror, turn reading, structured transport
 * (`kilo run --format json`) and ACP launch (`kilo acp`) are OpenCode's, parameterised by those
 * names (src/adapters/opencode/family.ts). Its own: the native binary behind the npm wrapper
 * (binary.ts), its versions, and its TUI's guard.
 */
export const kiloVersions: SupportedVersions = { floor: '7.7.7', certified: '7.7.7' };

export const kiloAdapter: CliAdapter = {
  ...opencodeFamily(KILO),
  name: 'kilo',
  executable: 'kilo',
  versions: kiloVersions,

  async resolveCli(cliPath: string | undefined, env: Record<string, string>): Promise<PinnedCli> {
    const found = findExecutable('kilo', cliPath, env);
    return pinSupported('Kilo Code CLI', await pinCli({ path: found.path, realPath: nativeKiloBinary(found) }, env, kiloVersion), kiloVersions);
  },

  folderTrust: { kind: 'none', why: 'Kilo Code CLI has no folder-trust dialog or setting: it runs the same in any folder' },

  // OpenCode's box and keys, drawn on a lighter background (input-box.ts).
  draft: { read: inputBoxReader(235, ['38;5;247']), keys: ['C-e', 'C-u'] },
  interruptKeys: ['Escape', 'Escape'],
  afterFailKeys: ['Escape', 'Escape'],
  messageGuard: kiloMessageGuard,
};
