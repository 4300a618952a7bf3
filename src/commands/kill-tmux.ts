import { AgentSessions } from '../sessions/agent-sessions.js';
import { StateStore } from '../state/store.js';
import { renderError, type GlobalOptions } from './common.js';

export async function runKillTmux(ref: string, opts: { json?: boolean }, global: GlobalOptions): Promise<number> {
  try {
    const store = await StateStore.open(global.stateDir);
    const handle = await new AgentSessions(store).killTmux(ref);
    if (opts.json) process.stdout.write(JSON.stringify({ handle: handle.id, status: handle.provider.status }) + '\n');
    else process.stderr.write(`handle: ${handle.id}\n`);
    return 0;
  } catch (err) {
    return renderError(err, opts);
  }
}
