import { Argument, Option, type Command } from 'commander';
import { CalError } from '../errors.js';
import { flagOf, type ArgSpec, type ArgValues, type CommandSpec, type GlobalOptions, type OptionSpec, type OptionValues } from './spec.js';

/** Adds one spec's command (under its group, for `model serve`) and wires its action to the exit code. */
export function register(program: Command, spec: CommandSpec, setExit: (code: number) => void): void {
  const words = spec.name.split(' ');
  let parent = program;
  for (const group of words.slice(0, -1)) {
    parent = parent.commands.find((c) => c.name() === group) ?? parent.command(group).description(spec.groupHelp ?? '');
  }
  const command = parent.command(words.at(-1) as string).description(spec.help);
  for (const alias of spec.aliases ?? []) command.alias(alias);
  for (const arg of spec.args) {
    const name = `${arg.name}${arg.variadic ? '...' : ''}`;
    command.addArgument(new Argument(arg.required ? `<${name}>` : `[${name}]`, arg.help));
  }
  for (const [key, o] of Object.entries(spec.options)) {
    const option = new Option(o.value ? `${flagOf(key)} ${o.value}` : flagOf(key), o.help);
    if (o.choices) option.choices(o.choices);
    if (o.default !== undefined) option.default(o.default);
    if (o.repeatable) option.argParser((value: string, earlier: string[] | undefined) => [...(earlier ?? []), value]);
    command.addOption(option);
  }
  command.action(async (...received: unknown[]) => {
    const args = received.slice(0, spec.args.length) as ArgValues<readonly ArgSpec[]>;
    const opts = received[spec.args.length] as OptionValues<Record<string, OptionSpec>>;
    // commander reads a `--no-x` switch as x=false (default true): the spec's key (`noX`) gets true when given.
    for (const key of Object.keys(spec.options).filter((k) => /^no[A-Z]/.test(k))) {
      const negated = `${key.charAt(2).toLowerCase()}${key.slice(3)}`;
      const record = opts as Record<string, unknown>;
      if (record[negated] === false) record[key] = true;
      delete record[negated];
    }
    // Checked here, after commander's own checks, so an unknown or misspelt flag is reported as
    // such rather than as the required option it failed to be.
    for (const [key, o] of Object.entries(spec.options)) {
      if (o.required && (opts as Record<string, unknown>)[key] === undefined) {
        throw new CalError('usage', `required option ${flagOf(key)}${o.value ? ` ${o.value}` : ''} not specified`);
      }
    }
    const global = program.opts<GlobalOptions>();
    if (spec.local !== undefined) {
      if (global.fleet !== undefined || global.fleetPasswordFile !== undefined) throw new CalError('usage', `cal ${spec.name} ${spec.local}, not through a fleet: run it without --fleet, on the machine it concerns`);
      // CAL_FLEET says where the fleet's commands go; a command of this machine runs here, and
      // nothing it starts inherits it.
      delete process.env.CAL_FLEET;
      delete process.env.CAL_FLEET_PASSWORD;
    }
    setExit(await spec.run(args, opts, global));
  });
}
