import { CalError } from '../errors.js';
import { renderError } from './common.js';
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
  },
  async run(_args, opts, global) {
    try {
      const url = global.fleet ?? process.env.CAL_FLEET;
      if (!url) throw new CalError('usage', 'cal worker needs --fleet <redis-url> (or CAL_FLEET)');
      const slots = opts.slots === undefined ? undefined : Number(opts.slots);
      if (slots !== undefined && (!Number.isInteger(slots) || slots < 1)) throw new CalError('usage', `--slots takes a whole number of at least 1, not ${JSON.stringify(opts.slots)}`);
      const { startFleetWorker } = await import('../fleet/worker.js');
      const env: Record<string, string | undefined> = { ...process.env };
      // The worker is the fleet's machine: its own calls never go back through the fleet.
      delete env.CAL_FLEET;
      // How soon a killed worker's jobs go back to its queue (BullMQ's lock); tests shorten it.
      const lockMs = process.env.CAL_FLEET_LOCK_MS ? Number(process.env.CAL_FLEET_LOCK_MS) : undefined;
      const worker = await startFleetWorker({ connection: url, host: opts.host, slots, stateDir: global.stateDir, env, lockMs, onReady: () => process.stderr.write(`cal: worker ${opts.host} ready\n`) });
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
