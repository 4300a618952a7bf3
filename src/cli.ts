import { createRequire } from 'node:module';
import { Command, CommanderError, Option } from 'commander';

/**
 * Builds the commander program. Each command's module is imported only when that command
 * runs, so `cal --version` and plain commands load little (and never Ink).
 */
const require = createRequire(import.meta.url);
const { version } = require('../package.json') as { version: string };

export const providerChoices = ['claude-code', 'codex', 'gemini', 'pi', 'cursor', 'agy', 'anthropic', 'openai'];

export function buildProgram(setExit: (code: number) => void): Command {
  const program = new Command();
  program
    .name('cal')
    .description('Continue a coding-agent session with one call, whatever CLI runs it and whatever happened to its terminal.')
    .version(version, '-V, --version')
    .option('--state-dir <dir>', 'state directory (default: $CAL_STATE_DIR or ~/.local/state/cal)')
    .showSuggestionAfterError()
    .exitOverride();

  const global = () => program.opts<{ stateDir?: string }>();

  program
    .command('start')
    .description('start a session and send its first message; the answer on stdout, the handle on stderr')
    .addOption(new Option('--provider <name>', 'which CLI or API').choices(providerChoices).makeOptionMandatory())
    .option('--cwd <dir>', 'working directory of the session (default: the current one)')
    .option('--model <model>', 'model name passed to the CLI')
    .addOption(new Option('--transport <kind>', 'how cal drives the CLI').choices(['tmux', 'structured', 'api']))
    .option('--name <name>', 'a name to use instead of the handle id')
    .option('--system-prompt <text>', 'system prompt appended natively by the CLI')
    .option('--system-prompt-file <file>', 'read the system prompt from a file')
    .option('--mcp-config <file>', 'MCP config file handed to the CLI')
    .option('--cli-path <path>', 'the CLI executable to pin (default: found on PATH)')
    .option('--timeout <seconds>', 'give up waiting for the end of the turn after this long')
    .option('--events', 'stream lifecycle events as NDJSON on stderr')
    .option('--stream', "print the assistant's text and tool activity as the CLI records them (NDJSON events with --json)")
    .option('--json', 'print one JSON object on stdout')
    .argument('[message]', 'the first message, or - to read it from stdin')
    .action(async (message: string | undefined, opts) => {
      const { runStart } = await import('./commands/start.js');
      setExit(await runStart(message, opts, global()));
    });

  program
    .command('continue')
    .description('send a message to a session: paste into its live pane, or resume it natively in a new one')
    .argument('<handle>', 'handle id or name')
    .argument('[message]', 'the message, or - to read it from stdin')
    .option('--cwd <dir>', 'expected working directory (stale_handle if it differs)')
    .option('--model <model>', 'expected model (stale_handle if it differs)')
    .option('--system-prompt <text>', 'expected system prompt')
    .option('--system-prompt-file <file>', 'expected system prompt, from a file')
    .option('--mcp-config <file>', 'expected MCP config')
    .option('--wait [seconds]', 'wait in line while another continuation runs, forever or --wait=S seconds (default: fail with busy)')
    .option('--timeout <seconds>', 'give up waiting for the end of the turn after this long')
    .option('--events', 'stream lifecycle events as NDJSON on stderr')
    .option('--stream', "print the assistant's text and tool activity as the CLI records them (NDJSON events with --json)")
    .option('--json', 'print one JSON object on stdout')
    .action(async (handle: string, message: string | undefined, opts) => {
      const { runContinue } = await import('./commands/continue.js');
      setExit(await runContinue(handle, message, opts, global()));
    });

  program
    .command('kill-tmux')
    .description("kill the session's tmux pane (the session itself can still be continued)")
    .argument('<handle>', 'handle id or name')
    .option('--json', 'print one JSON object on stdout')
    .action(async (handle: string, opts) => {
      const { runKillTmux } = await import('./commands/kill-tmux.js');
      setExit(await runKillTmux(handle, opts, global()));
    });

  program
    .command('inspect')
    .description('show handles: identity, panes, turns and events')
    .argument('[handle]', 'handle id or name (default: every handle)')
    .option('--json', 'print JSON')
    .action(async (handle: string | undefined, opts) => {
      const { runInspect } = await import('./commands/inspect.js');
      setExit(await runInspect(handle, opts, global()));
    });

  program
    .command('events')
    .description("print a handle's lifecycle events as NDJSON")
    .argument('<handle>', 'handle id or name')
    .option('--follow', 'keep printing new events')
    .action(async (handle: string, opts) => {
      const { runEvents } = await import('./commands/events.js');
      setExit(await runEvents(handle, opts, global()));
    });

  program
    .command('run')
    .description('run a durable plan: ordered phases (messages or commands) on one session')
    .argument('<plan>', 'plan file (YAML or JSON, see docs/plans.md)')
    .option('--events', 'stream lifecycle and workflow events as NDJSON on stderr')
    .option('--json', 'print one JSON object on stdout')
    .action(async (plan: string, opts) => {
      const { runPlanCommand } = await import('./commands/run.js');
      setExit(await runPlanCommand(plan, opts, global()));
    });

  program
    .command('lock')
    .description('run a command while holding a named lock (the locks plan phases take)')
    .argument('<name>', 'lock name')
    .argument('<command...>', 'the command, after --')
    .option('--wait [seconds]', 'wait for the lock, forever or --wait=S seconds (default: fail with busy)')
    .action(async (name: string, command: string[], opts) => {
      const { runLock } = await import('./commands/lock.js');
      setExit(await runLock(name, command, opts, global()));
    });

  program
    .command('recover')
    .description('settle every unfinished turn and phase whose cal process died, from the CLI transcript first')
    .option('--dry-run', 'say what would be done, change nothing')
    .option('--retry-lost', 'send a lost turn again through continuation')
    .option('--events', 'stream lifecycle events as NDJSON on stderr')
    .option('--json', 'print one JSON object on stdout')
    .action(async (opts) => {
      const { runRecover } = await import('./commands/recover.js');
      setExit(await runRecover(opts, global()));
    });

  program
    .command('certify')
    .description("certify a CLI version against cal's continuation contract (scripted model by default; exit 15 when a certification fails)")
    .addOption(new Option('--provider <name>', 'which CLI').choices(providerChoices).makeOptionMandatory())
    .option('--cli-path <path>', 'the CLI executable to certify (default: found on PATH)')
    .option('--only <ids>', 'comma-separated certification ids to run (default: all that apply)')
    .option('--live', "run against the vendor's real service with your own credentials and CLI config")
    .option('--json', 'print one JSON object on stdout')
    .option('--junit <file>', 'also write the results as JUnit XML')
    .action(async (opts) => {
      const { runCertify } = await import('./commands/certify.js');
      setExit(await runCertify(opts, global()));
    });

  program
    .command('demo')
    .description('the whole loop offline: scripted model, real CLI in tmux, kill the pane, resume natively')
    .addOption(new Option('--provider <name>', 'which CLI').choices(['claude-code']).default('claude-code'))
    .option('--cli-path <path>', 'the CLI executable (default: PATH, then the one cal ships for tests)')
    .action(async (opts) => {
      const { runDemo } = await import('./commands/demo.js');
      setExit(await runDemo(opts, global()));
    });

  const model = program.command('model').description('the scripted model server');
  model
    .command('serve')
    .description('serve the scripted model on 127.0.0.1; prints its base URL and runs until stopped')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--port <port>', 'port (default: any free one)')
    .option('--log <file>', 'append every request to this JSONL file')
    .option('--allow-remote', 'allow a non-loopback --host')
    .action(async (opts) => {
      const { runModelServe } = await import('./commands/model-serve.js');
      setExit(await runModelServe(opts));
    });

  return program;
}

/**
 * `--wait` takes an optional value only in the `--wait=S` form: a bare `--wait` must not swallow
 * the message that follows it, so it is rewritten before commander sees it.
 */
export function normaliseArgv(argv: string[]): string[] {
  return argv.map((arg) => (arg === '--wait' ? '--wait=forever' : arg));
}

export async function main(argv: string[]): Promise<number> {
  argv = normaliseArgv(argv);
  let code = 0;
  const program = buildProgram((c) => {
    code = c;
  });
  try {
    await program.parseAsync(argv);
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
      return 2; // commander already printed its one-line message
    }
    const { renderError } = await import('./commands/common.js');
    return renderError(err, {});
  }
}
