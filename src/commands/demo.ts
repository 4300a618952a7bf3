import { existsSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { packagePath } from '../util/package-root.js';
import { openSessions, TurnError } from '../index.js';
import { startModelServer } from '../model/server.js';
import { AgentSessions } from '../sessions/agent-sessions.js';
import { StateStore } from '../state/store.js';
import { passThroughEnv, renderError } from './common.js';
import { defineCommand } from './spec.js';

/** The CLIs the demo can run, by the executable each is found as. */
const DEMO_CLIS = { 'claude-code': 'claude', gemini: 'gemini', qwen: 'qwen', copilot: 'copilot', opencode: 'opencode', cline: 'cline' } as const;
type DemoProvider = keyof typeof DEMO_CLIS;

/**
 * The whole loop offline, on the embedded default: the scripted model on 127.0.0.1, the real
 * CLI in tmux in a home cal manages, a live paste, the pane killed, and native resume recalling
 * the codeword. Uses a throwaway state directory unless --state-dir is given.
 */
export const command = defineCommand({
  name: 'demo',
  help: 'the whole loop offline: scripted model, real CLI in tmux, kill the pane, resume natively',
  local: 'runs its own scripted model and CLI on this machine',
  args: [],
  options: {
    provider: { value: '<name>', help: 'which CLI', choices: Object.keys(DEMO_CLIS), default: 'claude-code' },
    cliPath: { value: '<path>', help: 'the CLI executable (default: PATH, then the one cal ships for tests)' },
  },
  async run(_args, opts, global) {
    const scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'cal-demo-'));
    const server = await startModelServer({});
    const stateDir = global.stateDir ?? path.join(scratch, 'state');
    const say = (line: string) => process.stdout.write(`${line}\n`);
    let store: StateStore | null = null;
    try {
      store = await StateStore.open(stateDir);
      const work = path.join(scratch, 'work');
      await fs.mkdir(work, { recursive: true });
      const provider = (opts.provider ?? 'claude-code') as DemoProvider;
      const bin = DEMO_CLIS[provider];
      const env = await AgentSessions.scriptedModelEnv(provider, scratch, server.url, passThroughEnv());
      const cliPath = opts.cliPath ?? (findOnPath(bin, env.PATH) ? undefined : bundledCli(bin));
      const sessions = await openSessions({ stateDir, env });
      const turn = { timeoutSeconds: 120 };
      say(`scripted model: ${server.url}`);

      say(`1. cal start --provider ${provider} "Remember the codeword TANGO."`);
      const first = await sessions.start({ provider, message: 'Remember the codeword TANGO.', cwd: work, cliPath, ...turn });
      say(`   answer: ${first.turn.answer}   (handle ${first.handle.id}, ${bin} ${first.handle.provider.cli?.version})`);

      say('2. cal continue <handle> "What was the codeword?"   (pane alive: pasted)');
      const second = await sessions.continue(first.handle, 'What was the codeword?', turn);
      say(`   answer: ${second.turn.answer}`);

      say('3. cal kill-tmux <handle>');
      await sessions.killTmux(first.handle);
      server.clearLog();

      say('4. cal continue <handle> "What was the codeword?"   (pane gone: native resume in a new pane)');
      const events: string[] = [];
      const third = await sessions.continue(first.handle, 'What was the codeword?', { ...turn, onEvent: (e) => events.push(e.event) });
      say(`   events: ${events.join(' → ')}`);
      say(`   answer: ${third.turn.answer}`);
      const lastRequest = server.turnRequests().at(-1);
      say(`   the model saw ${lastRequest?.userMessages.length ?? 0} user messages in the resumed request`);
      const ok = /TANGO/.test(third.turn.answer ?? '');
      say(ok ? 'demo: PASS (native resume reloaded the conversation)' : 'demo: FAIL');
      return ok ? 0 : 10;
    } catch (err) {
      if (!(err instanceof TurnError)) return renderError(err, {});
      say(`   the turn ended ${err.result.turn.status}: ${err.message}`);
      say('demo: FAIL');
      return 10;
    } finally {
      if (store) await new AgentSessions(store).shutdownTransports().catch(() => undefined);
      await server.close();
      if (!global.stateDir) await fs.rm(scratch, { recursive: true, force: true }).catch(() => undefined);
      // With --state-dir the handle outlives the demo, so its working directory and CLI home stay: said, not left silently.
      else process.stderr.write(`cal demo: kept ${scratch} (the session's working directory and CLI home; remove it with the handle)\n`);
    }
  },
});

function findOnPath(name: string, pathVar: string | undefined): boolean {
  return (pathVar ?? '').split(':').some((dir) => dir && existsSync(path.join(dir, name)));
}

/** The pinned CLI installed next to cal (a dev dependency), so a fresh clone's demo needs no global install. */
function bundledCli(name: string): string {
  return packagePath('node_modules', '.bin', name);
}
