/** `cal model env`: the shell exports that point the CLIs at a running `cal model serve`. */
import path from 'node:path';
import { CalError } from '../errors.js';
import type { ProviderName } from '../handles/schema.js';
import { scriptedShellEnv, shellLines } from '../sessions/scripted-shell.js';
import { checkModelUrl, openStateRoot, readServedModel } from '../sessions/served-model.js';
import { resolveStateDir } from '../state/paths.js';
import { passThroughEnv, renderError } from './common.js';
import { defineCommand } from './spec.js';

/** How long to wait for a `cal model serve` started just before (`cal model serve &` then this). */
const SERVE_WAIT_MS = 10_000;

async function servedUrl(stateDir: string): Promise<string | undefined> {
  const until = Date.now() + SERVE_WAIT_MS;
  for (;;) {
    const served = await readServedModel(stateDir);
    if (served) return served.url;
    if (Date.now() >= until) return undefined;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export const command = defineCommand({
  name: 'model env',
  help: 'print the shell exports that point every CLI at a running `cal model serve`: eval "$(cal model env)"',
  local: 'prints the settings of this machine\'s CLIs',
  args: [],
  options: {
    url: { value: '<url>', help: 'the served model (default: the `cal model serve` running with this state dir, waited for up to 10 s)' },
    provider: { value: '<name>', help: 'configure this CLI only (default: every CLI that can run offline)' },
  },
  async run(_args, opts, global) {
    try {
      const stateDir = resolveStateDir(global.stateDir);
      // Checked before anything is read or printed: what this prints, a shell runs.
      const given = opts.url === undefined ? undefined : checkModelUrl(opts.url, '--url');
      await openStateRoot(stateDir);
      const url = given ?? (await servedUrl(stateDir));
      if (url === undefined) {
        throw new CalError('usage', `no \`cal model serve\` is running with the state dir ${stateDir}: start one, or pass --url`);
      }
      const env = await scriptedShellEnv(path.join(stateDir, 'model-env'), checkModelUrl(url, '--url'), passThroughEnv(), opts.provider as ProviderName | undefined);
      process.stdout.write(`# cal model env: ${env.providers.join(', ')} on ${url}\n${shellLines(env).join('\n')}\n`);
      return 0;
    } catch (err) {
      return renderError(err, {});
    }
  },
});
