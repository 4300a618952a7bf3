import { exitCodes } from '../errors.js';
import { AgentSessions } from '../sessions/agent-sessions.js';
import { StateStore } from '../state/store.js';
import { readPlan } from '../workflow/plan.js';
import { executeRun, newRun } from '../workflow/runner.js';
import { eventPrinter, passThroughEnv, renderError, type GlobalOptions } from './common.js';

/** `cal run <plan>`: a durable plan of phases on one session (docs/plans.md). */
export async function runPlanCommand(planFile: string, opts: { json?: boolean; events?: boolean }, global: GlobalOptions): Promise<number> {
  try {
    const plan = await readPlan(planFile);
    const store = await StateStore.open(global.stateDir);
    const sessions = new AgentSessions(store);
    const run = newRun(planFile, plan);
    process.stderr.write(`run: ${run.id}\n`);
    const done = await executeRun(store, sessions, run, {
      env: passThroughEnv(),
      onEvent: eventPrinter(opts),
      onPhase: (phase, answer) => {
        if (!opts.json) process.stdout.write(`${phase.id}\t${phase.status}${answer ? `\t${answer.split('\n')[0]}` : phase.error ? `\t${phase.error}` : ''}\n`);
      },
    });
    if (done.handle) process.stderr.write(`handle: ${done.handle}\n`);
    if (opts.json) process.stdout.write(JSON.stringify({ run: done.id, handle: done.handle, status: done.status, phases: done.phases }) + '\n');
    return done.status === 'completed' ? 0 : exitCodes.turn_failed;
  } catch (err) {
    return renderError(err, opts);
  }
}
