import { exitCodes } from '../errors.js';
import { AgentSessions, type RecoverItem } from '../sessions/agent-sessions.js';
import { StateStore, type EventRecord } from '../state/store.js';
import { createProgress } from './progress.js';
import { recoverRuns } from '../workflow/runner.js';
import { eventPrinter, passThroughEnv, renderError, type GlobalOptions } from './common.js';

export interface RecoverOptions {
  dryRun?: boolean;
  retryLost?: boolean;
  json?: boolean;
  events?: boolean;
}

/**
 * `cal recover`: settles every unfinished turn whose cal died. Exit 0 when every turn it touched
 * ended completed (or was left to a live owner); otherwise the exit code of the first other end.
 */
export async function runRecover(opts: RecoverOptions, global: GlobalOptions): Promise<number> {
  try {
    const store = await StateStore.open(global.stateDir);
    const sessions = new AgentSessions(store);
    const env = passThroughEnv();
    const progress = await createProgress({ json: opts.json, initial: 'recovering' });
    const printEvent = eventPrinter(opts);
    const onEvent = (e: EventRecord) => {
      printEvent?.(e);
      progress.onEvent(e);
    };
    let items: RecoverItem[];
    let runs: Awaited<ReturnType<typeof recoverRuns>>;
    try {
      // Turns first (from the transcripts), then the runs they belong to, from the phase they reached.
      items = await sessions.recover({ dryRun: opts.dryRun, retryLost: opts.retryLost, env, onEvent });
      runs = await recoverRuns(store, sessions, { env, dryRun: opts.dryRun, onEvent });
    } finally {
      progress.stop();
    }
    if (opts.json) process.stdout.write(JSON.stringify({ dryRun: Boolean(opts.dryRun), turns: items, runs }) + '\n');
    else {
      for (const r of runs) process.stdout.write(`run ${r.run}\t${r.status}${r.skipped ? `\t[${r.skipped}]` : ''}\n`);
      if (items.length === 0 && runs.length === 0) process.stderr.write('cal: nothing to recover\n');
      for (const i of items) {
        process.stdout.write(`${i.handle}\t${i.turn}\t${i.before} -> ${i.action} -> ${i.status}${i.answer ? `\t${i.answer.split('\n')[0]}` : ''}${i.error ? `\t[${i.error}]` : ''}\n`);
      }
    }
    if (opts.dryRun) return 0;
    const turnsExit = exitFor(items);
    if (turnsExit !== 0) return turnsExit;
    return runs.some((r) => r.status === 'failed') ? exitCodes.turn_failed : 0;
  } catch (err) {
    return renderError(err, opts);
  }
}

function exitFor(items: RecoverItem[]): number {
  for (const i of items) {
    if (i.action === 'skipped_busy' || i.action === 'skipped_settled') continue;
    if (i.action === 'skipped_unreadable') return exitCodes.invalid_handle;
    switch (i.status) {
      case 'completed':
        continue;
      case 'failed':
        return exitCodes.turn_failed;
      case 'interrupted':
        return exitCodes.interrupted;
      case 'lost':
        return exitCodes.lost;
      default:
        return exitCodes.timeout;
    }
  }
  return 0;
}
