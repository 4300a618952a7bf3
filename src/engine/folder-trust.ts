import type { CliAdapter, SessionConfig } from '../adapters/types.js';
import { CalError } from '../errors.js';

/**
 * The trust policy, applied in one place before every launch of a CLI (fresh, resumed, or a
 * structured turn's process): docs/security.md, "What cal trusts".
 *
 * By default cal trusts the folder the caller named, as the caller would by answering the CLI's
 * own dialog (the adapter's `folderTrust.trust`). With the policy off, cal trusts nothing on the
 * user's behalf: a CLI that would ask about this folder (in its headless mode as well, for a CLI
 * whose headless mode asks) is refused `untrusted_folder` before anything is sent, naming the
 * folder and how the user trusts it; cal is then no more permissive than the CLI's own headless
 * mode. Then the adapter's `prepare` answers the rest (onboarding and the like).
 *
 * Resolves false when neither step wrote anything a CLI reads at its start (see `prepare`).
 */
export async function prepareLaunch(adapter: CliAdapter, env: Record<string, string>, config: SessionConfig, transport: 'tmux' | 'structured'): Promise<boolean> {
  const wroteTrust = await applyFolderTrust(adapter, env, config, transport);
  const prepared = await adapter.prepare(env, config);
  return wroteTrust || prepared !== false;
}

async function applyFolderTrust(adapter: CliAdapter, env: Record<string, string>, config: SessionConfig, transport: 'tmux' | 'structured'): Promise<boolean> {
  const trust = adapter.folderTrust;
  if (trust.kind === 'none') return false;
  // Only an explicit false turns it off: the policy's default is on.
  if (config.trustWorkingDir !== false) return trust.trust(env, config.cwd);
  if (await trust.trusted(env, config.cwd, transport)) return false;
  throw new CalError(
    'untrusted_folder',
    `${adapter.name} does not trust ${config.cwd}, and this session is never to trust a folder on your behalf (--no-trust, or trustWorkingDir in cal's config.json): ${trust.howToTrust(config.cwd)}; nothing was sent`,
  );
}
