import { startRecordedContinuation } from '../sessions/early-start.js';
import { commandIndex, fleetArg, stateDirArg } from '../cli-argv.js';

/**
 * What cal's entry (bin/cal.cjs) runs before the command line loads: for `cal continue <handle
 * id> …` (the handle right after the command word), the CLI of the handle's next resumed turn is
 * started now, if the handle's last turn recorded how (sessions/early-start.ts). A handle given
 * by name, or an option before the handle, starts nothing early. Never throws.
 */
export function startEarly(argv: readonly string[], env: NodeJS.ProcessEnv): void {
  const args = argv.slice(2);
  const at = commandIndex(args);
  const ref = args[at + 1];
  // Through a fleet the turn runs on the handle's host: nothing starts here.
  if (at === -1 || args[at] !== 'continue' || ref === undefined || fleetArg(args, env)) return;
  // A detached continue's turn runs in a cal of its own (commands/detach.ts), which starts it there.
  const end = args.indexOf('--');
  if ((end === -1 ? args : args.slice(0, end)).includes('--detach')) return;
  startRecordedContinuation(stateDirArg(args), ref, env);
}
