import { CalError } from '../errors.js';
import { fleetPassword, renderError } from './common.js';
import { defineCommand } from './spec.js';

/**
 * `cal worker --fleet <url> --host <name>`: this machine serves the fleet (docs/fleet.md) until
 * SIGTERM or Ctrl-C, which stop it taking jobs and let the running ones end.
 */
export const command = defineCommand({
  name: 'worker',
  help: 'serve a fleet: run the sessions this machine owns, and new ones, from the fleet\'s Redis (docs/fleet.md)',
  args: [],
  options: {
    host: { value: '<name>', help: 'this machine\'s name in the fleet (the sessions it starts stay on it)', required: true },
    slots: { value: '<n>', help: 'new sessions this worker runs at once (default 2)' },
    allowDir: {
      value: '<dir>',
      repeatable: true,
      help: "a folder under which fleet sessions may run (repeatable); a start or continue elsewhere is refused (usage). Default: the worker's own current directory only",
    },
  },
  async run(_args, opts, global) {
    try {
      const url = global.fleet ?? process.env.CAL_FLEET;
      if (!url) throw new CalError('usage', 'cal worker needs --fleet <redis-url> (or CAL_FLEET)');
      const slots = opts.slots === undefined ? undefined : Number(opts.slots);
      if (slots !== undefined && (!Number.isInteger(slots) || slots < 1)) throw new CalError('usage', `--slots takes a whole number of at least 1, not ${JSON.stringify(opts.slots)}`);
      const { startFleetWorker } = await import('../fleet/worker.js');
      const password = fleetPassword(global) ?? process.env.CAL_FLEET_PASSWORD;
      const env: Record<string, string | undefined> = { ...process.env };
      // The worker is the fleet's machine: its own calls never go back through the fleet, and
      // its CLIs are never handed the fleet's password.
      delete env.CAL_FLEET;
      delete env.CAL_FLEET_PASSWORD;
      // How soon a killed worker's jobs go back to its queue (BullMQ's lock); tests shorten it.
      const lockMs = process.env.CAL_FLEET_LOCK_MS ? Number(process.env.CAL_FLEET_LOCK_MS) : undefined;
      const worker = await startFleetWorker({
        connection: url,
        ...(password ? { password } : {}),
        host: opts.host,
        slots,
        stateDir: global.stateDir,
        env,
        lockMs,
        ...(opts.allowDir ? { allowDirs: opts.allowDir } : {}),
        onReady: (roots) => process.stderr.write(`cal: worker ${opts.host} ready; sessions may run under ${roots.join(', ')}${opts.allowDir ? '' : ' (its current directory; --allow-dir DIR to choose)'}\n`),
      });
      await new Promise<void>((resolve) => {
        const stop = () => {
          process.off('SIGTERM', stop);
          process.off('SIGINT', stop);
          process.once('SIGTERM', () => process.exit(143));
          process.once('SIGINT', () => process.exit(130));
          resolve();
        };
        process.on('SIGTERM', stop);
        process.on('SIGINT', stop);
      });
      await worker.stop();
      return 0;
    } catch (err) {
      return renderError(err, {});
    }
  },
});
