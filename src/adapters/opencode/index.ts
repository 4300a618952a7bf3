import type { PinnedCli } from '../../handles/schema.js';
import { findExecutable, pinCli } from '../resolve.js';
import { pinSupported, type SupportedVersions } from '../versions.js';
import type { CliAdapter } from '../types.js';
import { opencodeFamily } from './family.js';
import { OPENCODE } from './flavour.js';
import { readOpencodeInputBox } from './input-box.js';
import { opencodeMessageGuard } from './message-guard.js';

/**
 * OpenCode (`opencode-ai`, binary `opencode`, a Bun-compiled native binary), measured on 1.18.33
 * (docs/opencode.md; research: opencode-copilot-qwen-pi1.md). Its sessions, store, flags and
 * transports are the family's (family.ts, shared with Kilo Code CLI); what is OpenCode's own is
 * below: its binary, its versions, its TUI's guard, input box and keys. OpenCode opens no dialog
 * at start; the homes cal makes for its scripted model turn off the update check and the model
 * catalogue download (home.ts).
 *
 * Structured transport: `opencode run --format json` (structured.ts, docs/opencode.md says why).
 */
export const opencodeVersions: SupportedVersions = { floor: '1.18.33', certified: '1.18.33' };

export const opencodeAdapter: CliAdapter = {
  ...opencodeFamily(OPENCODE),
  name: 'opencode',
  executable: 'opencode',
  versions: opencodeVersions,

  async resolveCli(cliPath: string | undefined, env: Record<string, string>): Promise<PinnedCli> {
    const found = findExecutable('opencode', cliPath, env);
    return pinSupported('OpenCode', await pinCli(found, env), opencodeVersions);
  },

  folderTrust: { kind: 'none', why: 'OpenCode has no folder-trust dialog or setting: it runs the same in any folder' },

  draft: { read: readOpencodeInputBox, keys: ['C-e', 'C-u'] },
  // One Escape only arms the interrupt ("again to interrupt"); a second within 5 s aborts the
  // session's run (its bundle: the interrupt count reset after 5000 ms, abort at 2).
  interruptKeys: ['Escape', 'Escape'],
  // A turn failed on a model OpenCode still retries (turn.ts): its interrupt stops the retries.
  afterFailKeys: ['Escape', 'Escape'],
  messageGuard: opencodeMessageGuard,
};
