import path from 'node:path';
import { startRecordedLaunch } from '../adapters/early-launch.js';
import { isHandleId } from '../handles/id.js';
import { resolveStateDir, stateLayout } from '../state/paths.js';
import { isPrivateDir } from '../util/private-dir.js';

/**
 * Starts the CLI of a handle's next resumed turn before cal's modules load (for cal's entry,
 * through commands/early-start.ts), where its adapter recorded the launch in the handle's
 * session folder (adapters/early-launch.ts). The turn takes it only if it would launch the very
 * same; anything else kills it unsent. The state directory and homes/ must pass the rule cal holds
 * them to everywhere (util/private-dir.ts); CAL_EARLY_LAUNCH=0 turns it off. Never throws: the
 * turn then starts its CLI itself.
 */
export function startRecordedContinuation(stateDir: string | undefined, ref: string, env: NodeJS.ProcessEnv): void {
  // Only a handle id: a name would need every handle read.
  if (env.CAL_EARLY_LAUNCH === '0' || !isHandleId(ref)) return;
  try {
    const root = resolveStateDir(stateDir, env);
    const homes = stateLayout(root).homes;
    if (!isPrivateDir(root) || !isPrivateDir(homes)) return;
    startRecordedLaunch(path.join(homes, ref), env);
  } catch {
    // Nothing started: the turn starts its CLI itself.
  }
}
