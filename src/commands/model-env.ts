/** `cal model env`: the shell exports that point the CLIs at a running `cal model serve`. */
import path from 'node:path';
import { CalError } from '../errors.js';
import type { ProviderName } from '../handles/schema.js';
import { readServedModel, scriptedShellEnv, shellLines } from '../sessions/scripted-shell.js';
import { resolveStateDir } from '../state/paths.js';
import { passThroughEnv, renderError } from './common.js';
import { defineCommand } from './spec.js';

export const command = defineCommand({
  name: 'model env',
  help: 'print the shell exports that point every CLI at a running `cal model serve`: eval "$(cal model env)"',
  args: [],
  options: {
    url: { value: '<url>', help: 'the served model (default: the `cal model serve` running with this state dir)' },
    provider: { value: '<name>', help: 'configure this CLI only (default: every CLI that can run offline)' },
  },
  async run(_args, opts, global) {
    try {
      const stateDir = resolveStateDir(global.stateDir);
      const url = opts.url ?? (await readServedModel(stateDir))?.url;
      if (url === undefined) {
        throw new CalError('usage', `no \`cal model serve\` is running with the state dir ${stateDir}: start one, or pass --url`);
      }
      if (!/^https?:\/\/[^/]+/.test(url)) throw new CalError('usage', `--url must be an http URL such as http://127.0.0.1:8080, not ${JSON.stringify(url)}`);
      const env = await scriptedShellEnv(path.join(stateDir, 'model-env'), url.replace(/\/+$/, ''), passThroughEnv(), opts.provider as ProviderName | undefined);
      process.stdout.write(`# cal model env: ${env.providers.join(', ')} on ${url}\n${shellLines(env).join('\n')}\n`);
      return 0;
    } catch (err) {
      return renderError(err, {});
    }
  },
});
