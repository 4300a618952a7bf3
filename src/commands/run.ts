import { exitCodes } from '../errors.js';
import { AgentSessions } from '../sessions/agent-sessions.js';
import { StateStore } from '../state/store.js';
import { readPlan } from '../workflow/plan.js';
import { executeRun, newRun } from '../workflow/runner.js';
import { passThroughEnv, renderError } from './common.js';
import { defineCommand } from './spec.js';
import { forTerminal } from '../util/terminal-text.js';

/**
 * `cal run <plan>`: a durable plan of phases on one session (docs/plans.md). Plans are durable
 * work above the library's surface, so this command drives the workflow runner directly.
 */
export const command = defineCommand({
  name: 'run',
  help: 'run a durable plan: ordered phases (messages or commands) on one session',
  local: 'runs a plan on this machine\'s sessions and commands',
  args: [{ name: 'plan', help: 'plan file (YAML or JSON, see docs/plans.md)', required: true }],
  options: {
    events: { help: 'stream lifecycle and workflow events as NDJSON on stderr' },
    json: { help: 'print one JSON object on stdout' },
  },
  async run([planFile], opts, global) {
    try {
      const plan = await readPlan(planFile);
      const store = await StateStore.open(global.stateDir);
      const sessions = new AgentSessions(store);
      const run = newRun(planFile, plan);
      process.stderr.write(`run: ${run.id}\n`);
      const done = await executeRun(store, sessions, run, {
        env: passThroughEnv(),
        onEvent: opts.events ? (e) => process.stderr.write(JSON.stringify(e) + '\n') : undefined,
        onPhase: (phase, answer) => {
          if (!opts.json) process.stdout.write(forTerminal(`${phase.id}\t${phase.status}${answer ? `\t${answer.split('\n')[0]}` : phase.error ? `\t${phase.error}` : ''}\n`));
        },
      });
      if (done.handle) process.stderr.write(`handle: ${done.handle}\n`);
      if (opts.json) process.stdout.write(JSON.stringify({ run: done.id, handle: done.handle, status: done.status, phases: done.phases }) + '\n');
      return done.status === 'completed' ? 0 : exitCodes.turn_failed;
    } catch (err) {
      return renderError(err, opts);
    }
  },
});
