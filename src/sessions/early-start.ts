import path from 'node:path';
import { startRecordedLaunch } from '../adapters/early-launch.js';
import { resolveStateDir, stateLayout } from '../state/paths.js';
import { isPrivateDir } from '../util/private-dir.js';

/**
 * What cal's entry (bin/cal.cjs) runs before the command line loads: for
 * `cal [--state-dir D] continue <handle id> …`, the CLI of the handle's next resumed turn is
 * started now, where its adapter recorded how in the handle's session folder
 * (adapters/early-launch.ts). The turn takes it only if it would launch the very same; anything
 * else kills it unsent. Only that exact shape of command line is recognised (an option before
 * the handle, or a handle given by name, starts nothing early), the state directory and its
 * folders must pass the rule cal holds them to everywhere (util/private-dir.ts), and
 * CAL_EARLY_LAUNCH=0 turns it off. Never throws: the turn then starts its CLI itself.
 */
export function startEarly(argv: readonly string[], env: NodeJS.ProcessEnv): void {
  if (env.CAL_EARLY_LAUNCH === '0') return;
  try {
    const args = argv.slice(2);
    let explicit: string | undefined;
    let i = 0;
    if (args[0] === '--state-dir') {
      explicit = args[1];
      i = 2;
    } else if (args[0]?.startsWith('--state-dir=')) {
      explicit = args[0].slice('--state-dir='.length);
      i = 1;
    }
    const id = args[i + 1];
    // A handle id's form (handles/schema.ts HandleId); a name would need every handle read.
    if (args[i] !== 'continue' || id === undefined || !/^[a-z0-9]{6,32}$/.test(id)) return;
    const root = resolveStateDir(explicit, env);
    const homes = stateLayout(root).homes;
    if (!isPrivateDir(root) || !isPrivateDir(homes)) return;
    startRecordedLaunch(path.join(homes, id), env);
  } catch {
    // Nothing started: the turn starts its CLI itself.
  }
}
