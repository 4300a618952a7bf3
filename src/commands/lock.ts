import os from 'node:os';
import { CalError } from '../errors.js';
import { StateStore } from '../state/store.js';
import { namedLock } from '../workflow/runner.js';
import { parseSeconds, renderError } from './common.js';
import { defineCommand } from './spec.js';
import { runExeca } from '../util/spawn.js';

/**
 * `cal lock <name> [--wait[=S]] -- <command…>`: runs a command while holding one of the named
 * locks plan phases take (first come, first served; a dead holder's lock is reclaimed at once).
 */
export const command = defineCommand({
  name: 'lock',
  help: 'run a command while holding a named lock (the locks plan phases take)',
  local: 'holds a lock of this machine\'s state directory',
  args: [
    { name: 'name', help: 'lock name', required: true },
    { name: 'command', help: 'the command, after --', required: true, variadic: true },
  ],
  options: {
    wait: { value: '[seconds]', help: 'wait for the lock, forever or --wait=S seconds (default: fail with busy)' },
  },
  async run([name, command], opts, global) {
    try {
      if (!/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/.test(name)) throw new CalError('usage', `invalid lock name ${JSON.stringify(name)}: letters, digits, _ and -`);
      if (command.length === 0) throw new CalError('usage', 'a command to run is required after --');
      const waitSeconds = opts.wait === undefined ? undefined : opts.wait === true || opts.wait === 'forever' ? Infinity : parseSeconds(String(opts.wait), '--wait');
      const store = await StateStore.open(global.stateDir);
      const held = await store.locks.acquire(namedLock(name), { waitSeconds }).catch((err: unknown) => {
        if (!(err instanceof CalError)) throw err;
        // The lock module speaks of a handle being continued; here it is a lock a command or a
        // plan phase holds, named as the user named it (its file name is cal's business).
        if (err.kind === 'busy') throw new CalError('busy', heldMessage(name, waitSeconds), err.details);
        throw new CalError(err.kind, err.message.replace(namedLock(name), `lock ${name}`), err.details);
      });
      try {
        // The user's own command, on the user's terminal: stdio is cal's (the one case it is inherited).
        const res = await runExeca(command[0] as string, command.slice(1), { stdio: 'inherit', reject: false });
        if (res.exitCode !== undefined) return res.exitCode;
        // Killed by a signal: the shell's convention, 128 + its number.
        if (res.signal) return 128 + (os.constants.signals[res.signal] ?? 0);
        const why = (res as { code?: string }).code === 'ENOENT' ? 'command not found' : (res as { code?: string }).code === 'EACCES' ? 'permission denied' : res.shortMessage;
        throw new CalError('usage', `cannot run ${JSON.stringify(command[0])}: ${why}`);
      } finally {
        await held.release();
      }
    } catch (err) {
      return renderError(err, {});
    }
  },
});

/** Why the lock was not taken: a lock is held (by a cal lock or a plan phase), not a handle continued. */
function heldMessage(name: string, waitSeconds: number | undefined): string {
  const by = 'another process (a cal lock command or a plan phase)';
  if (waitSeconds === undefined) return `lock ${name} is busy: it is held by ${by}; retry later, or pass --wait to wait for it`;
  return `lock ${name} is still busy after waiting ${waitSeconds}s: it is held by ${by}; retry later`;
}
