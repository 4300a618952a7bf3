import { Command, CommanderError } from 'commander';
import { endQuietlyOnClosedPipe } from './util/closed-pipe.js';
import { register } from './commands/register.js';
import type { CommandSpec } from './commands/spec.js';
import { timingMark } from './util/timing.js';
import { calVersion } from './util/package-root.js';
import { commandIndex, commandWord } from './cli-argv.js';

export { commandWord } from './cli-argv.js';

/**
 * Builds the commander program from the commands' own specs. Only the module of the command
 * being run is imported (help and unknown commands import them all, to list them), so
 * `cal --version` loads no command at all and `cal continue` never loads another command's
 * dependencies, nor Ink, React or ora unless a terminal needs them.
 */
type CommandModule = { command: CommandSpec<any, any> };

/** Every command, in the order help lists them. */
export const commandModules: Record<string, () => Promise<CommandModule>> = {
  start: () => import('./commands/start.js'),
  continue: () => import('./commands/continue.js'),
  'kill-tmux': () => import('./commands/kill-tmux.js'),
  remove: () => import('./commands/remove.js'),
  cancel: () => import('./commands/cancel.js'),
  attach: () => import('./commands/attach.js'),
  reap: () => import('./commands/reap.js'),
  inspect: () => import('./commands/inspect.js'),
  ls: () => import('./commands/ls.js'),
  show: () => import('./commands/show.js'),
  wait: () => import('./commands/wait.js'),
  events: () => import('./commands/events.js'),
  run: () => import('./commands/run.js'),
  lock: () => import('./commands/lock.js'),
  recover: () => import('./commands/recover.js'),
  worker: () => import('./commands/worker.js'),
  certify: () => import('./commands/certify.js'),
  demo: () => import('./commands/demo.js'),
  doctor: () => import('./commands/doctor.js'),
  'model serve': () => import('./commands/model-serve.js'),
  'model env': () => import('./commands/model-env.js'),
};

/** Other words for a command (its spec's aliases), so that only its module is loaded for them too. */
export const commandAliases: Record<string, string> = { list: 'ls' };

/** The specs a run needs: the one named command, none for a bare --version, all for help or an unknown word. */
export async function specsFor(args: readonly string[]): Promise<CommandSpec[]> {
  const given = commandWord(args);
  const word = given === null ? null : (commandAliases[given] ?? given);
  // A group word (`model`) loads the module of the subcommand named after it, else all of the group's.
  const sub = word === null ? undefined : commandModules[`${word} ${args[commandIndex(args) + 1] ?? ''}`];
  const group = word === null ? [] : Object.entries(commandModules).filter(([key]) => key === word || key.startsWith(`${word} `)).map(([, load]) => load);
  const loads = sub ? [sub] : group;
  if (loads.length > 0) return Promise.all(loads.map(async (load) => (await load()).command));
  if (word === null && args.some((a) => a === '-V' || a === '--version')) return [];
  return Promise.all(Object.values(commandModules).map(async (l) => (await l()).command));
}

export function buildProgram(specs: readonly CommandSpec[], setExit: (code: number) => void): Command {
  const program = new Command();
  program
    .name('cal')
    .description('Continue a coding-agent session with one call, whatever CLI runs it and whatever happened to its terminal.')
    .version(calVersion(), '-V, --version')
    .option('--state-dir <dir>', 'state directory (default: $CAL_STATE_DIR or ~/.local/state/cal)')
    .option('--fleet <url>', 'run through a fleet of cal workers on this Redis (default: $CAL_FLEET; docs/fleet.md)')
    .option('--fleet-password-file <file>', "the fleet's Redis password, read from FILE (default: $CAL_FLEET_PASSWORD; never in the URL on a shared machine)")
    .showSuggestionAfterError()
    // Commander's own error text is replaced by cal's one line (or JSON) in main().
    .configureOutput({ outputError: () => undefined })
    .exitOverride();
  for (const spec of specs) register(program, spec, setExit);
  return program;
}

/**
 * `--wait` takes an optional value only in the `--wait=S` form: a bare `--wait` must not swallow
 * the message that follows it, so it is rewritten before commander sees it.
 */
export function normaliseArgv(argv: string[]): string[] {
  return argv.map((arg) => (arg === '--wait' ? '--wait=forever' : arg));
}

/** Whether the command line asks for JSON (a `--json` before any `--`), for errors commander raises before a command runs. */
export function wantsJson(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).includes('--json');
}

export async function main(argv: string[]): Promise<number> {
  timingMark('main');
  endQuietlyOnClosedPipe();
  argv = normaliseArgv(argv);
  let code = 0;
  try {
    const program = buildProgram(await specsFor(argv.slice(2)), (c) => {
      code = c;
    });
    timingMark('command-loaded');
    await program.parseAsync(argv);
    timingMark('command-done');
    return code;
  } catch (err) {
    if (err instanceof CommanderError && (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help')) return 0;
    const { renderError } = await import('./commands/common.js');
    const json = wantsJson(argv.slice(2));
    if (err instanceof CommanderError) {
      const { CalError } = await import('./errors.js');
      return renderError(new CalError('usage', err.message.replace(/^error: /, '')), { json });
    }
    return renderError(err, { json });
  }
}
