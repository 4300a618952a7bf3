import path from 'node:path';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { baseEnv, killStateTmux, runCal, scratchDir, type CalRun } from './cal.js';
import { claudeTestEnv, makeWorkDir } from './claude-home.js';
import { removeScratch } from './scratch.js';

/**
 * What a test file driving the real Claude Code needs: the scripted model, a scratch folder with
 * a throwaway HOME, a working dir and a state dir (so its own tmux server), and `cal` bound to them.
 */
export interface ClaudeSuite {
  server: ModelServer;
  root: string;
  state: string;
  work: string;
  env: Record<string, string>;
  cal(args: string[], input?: string): Promise<CalRun>;
  /** Ends the suite's tmux server and model server; removes the scratch folder when asked. */
  close(opts?: { removeScratch?: boolean }): Promise<void>;
}

export async function claudeSuite(prefix: string): Promise<ClaudeSuite> {
  const server = await startModelServer({});
  const root = await scratchDir(prefix);
  const state = path.join(root, 'state');
  const work = await makeWorkDir(root);
  const env = await claudeTestEnv(root, server.url, baseEnv({}));
  return {
    server,
    root,
    state,
    work,
    env,
    cal: (args, input) => runCal(['--state-dir', state, ...args], { env, input }),
    async close(opts = {}) {
      await killStateTmux(state);
      await server.close();
      if (opts.removeScratch) await removeScratch(root);
    },
  };
}
