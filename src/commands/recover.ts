import { exitCodes, openSessions, type CalEvent, type RecoverItem } from '../index.js';
import { eventPrinter, parseSeconds, renderError, openOptions } from './common.js';
import { createProgress, spinnerWanted } from './progress.js';
import { defineCommand } from './spec.js';
import { forTerminal } from '../util/terminal-text.js';

/**
 * `cal recover`: settles every unfinished turn whose cal died. Exit 0 when every turn it touched
 * ended completed (or was left to a live owner); otherwise the exit code of the first other end.
 */
export const command = defineCommand({
  name: 'recover',
  help: 'settle every unfinished turn and phase whose cal process died, from the CLI transcript first',
  args: [],
  options: {
    dryRun: { help: 'say what would be done, change nothing' },
    retryLost: { help: 'send a lost turn again through continuation' },
    timeout: { value: '<seconds>', help: 'how long to wait for each turn the CLI is still working on (default 600)' },
    events: { help: 'stream lifecycle events as NDJSON on stderr' },
    json: { help: 'print one JSON object on stdout' },
  },
  async run(_args, opts, global) {
    try {
      const sessions = await openSessions(openOptions(global));
      const progress = await createProgress({ json: opts.json, initial: 'recovering' });
      const spinning = spinnerWanted({ json: opts.json });
      const printEvent = eventPrinter(opts);
      const onEvent = (e: CalEvent) => {
        printEvent?.(e);
        progress.onEvent(e);
        // Progress for people and logs: which turn recover is on and what it does with it (a
        // wait for a CLI still working can take up to --timeout).
        if (!opts.json && !opts.events && e.event === 'recovering') {
          const action = String((e.detail as { action?: unknown } | undefined)?.action ?? '');
          const line = `recovering ${e.handle} ${e.turn ?? ''}: ${progressWords[action] ?? action}`;
          if (spinning) progress.setState(line);
          else process.stderr.write(`${line}\n`);
        }
      };
      const { turns: items, runs } = await sessions.recover({ dryRun: opts.dryRun, retryLost: opts.retryLost, onEvent, ...(opts.timeout ? { timeoutSeconds: parseSeconds(opts.timeout, '--timeout') } : {}) }).finally(() => progress.stop());
      if (opts.json) process.stdout.write(JSON.stringify({ dryRun: Boolean(opts.dryRun), turns: items, runs }) + '\n');
      else {
        for (const r of runs) process.stdout.write(`run ${r.run}\t${r.status}${r.skipped ? `\t[${r.skipped}]` : ''}\n`);
        if (items.length === 0 && runs.length === 0) process.stderr.write('cal: nothing to recover\n');
        for (const i of items) {
          process.stdout.write(forTerminal(`${i.handle}\t${i.turn}\t${i.before} -> ${i.action} -> ${i.status}${i.answer ? `\t${i.answer.split('\n')[0]}` : ''}${i.error ? `\t[${i.error}]` : ''}\n`));
        }
      }
      if (opts.dryRun) return 0;
      const turnsExit = exitFor(items);
      if (turnsExit !== 0) return turnsExit;
      return runs.some((r) => r.status === 'failed') ? exitCodes.turn_failed : 0;
    } catch (err) {
      return renderError(err, opts);
    }
  },
});

const progressWords: Record<string, string> = {
  settled_from_transcript: 'settling from the transcript',
  waited_for_cli: 'waiting for the CLI to finish it (up to --timeout)',
  marked_lost: 'its pane is gone: marking it lost',
  delivered: 'delivering the message',
  retried_lost: 'sending the lost message again',
};

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
