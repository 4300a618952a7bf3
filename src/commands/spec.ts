/**
 * A command's flags and arguments, declared once next to its behaviour (as vercel's CLI does):
 * the option values a command receives are typed from this spec, and `src/cli.ts` builds the
 * commander command from it. An option's key is its camelCase name; the flag is its kebab-case
 * (`systemPromptFile` → `--system-prompt-file`).
 */
export interface OptionSpec {
  /** `<x>`: takes a value; `[x]`: takes an optional value (bare flag: true); absent: a switch. */
  readonly value?: `<${string}>` | `[${string}]`;
  readonly help: string;
  readonly choices?: readonly string[];
  readonly required?: boolean;
  readonly default?: string;
  /** A `<x>` option that may be given more than once: its values in order. */
  readonly repeatable?: boolean;
}

export interface ArgSpec {
  readonly name: string;
  readonly help: string;
  readonly required?: boolean;
  /** Takes every remaining argument (the last one only). */
  readonly variadic?: boolean;
}

/** Options every command receives (declared on the program in src/cli.ts). */
export interface GlobalOptions {
  stateDir?: string;
  /** A fleet's Redis URL (docs/fleet.md): the command runs through the fleet's workers. */
  fleet?: string;
  /** A file holding the fleet's Redis password (so it is in no argv; else CAL_FLEET_PASSWORD). */
  fleetPasswordFile?: string;
}

type OptionValue<S extends OptionSpec> = S extends { readonly repeatable: true }
  ? string[]
  : S extends { readonly choices: readonly (infer C)[] }
  ? C
  : S extends { readonly value: `<${string}>` }
    ? string
    : S extends { readonly value: `[${string}]` }
      ? string | true
      : true;

type Given<S> = S extends { readonly required: true } | { readonly default: string } ? true : false;

/** The option values commander hands the action, typed from the spec. */
export type OptionValues<O extends Record<string, OptionSpec>> = {
  [K in keyof O as Given<O[K]> extends true ? K : never]: OptionValue<O[K]>;
} & {
  [K in keyof O as Given<O[K]> extends true ? never : K]?: OptionValue<O[K]>;
};

/** The positional arguments, typed from the spec (a tuple in declaration order). */
export type ArgValues<A extends readonly ArgSpec[]> = {
  -readonly [I in keyof A]: A[I] extends { readonly variadic: true } ? string[] : A[I] extends { readonly required: true } ? string : string | undefined;
};

export interface CommandSpec<O extends Record<string, OptionSpec> = Record<string, OptionSpec>, A extends readonly ArgSpec[] = readonly ArgSpec[]> {
  /** `start`, or `model serve` for a subcommand of a group. */
  readonly name: string;
  readonly help: string;
  /** For a subcommand: the group's own line of help. */
  readonly groupHelp?: string;
  /** Other words for the command (`list` for `ls`), listed in src/cli.ts's commandAliases too. */
  readonly aliases?: readonly string[];
  readonly args: A;
  readonly options: O;
  /**
   * A command that runs on this machine only (docs/fleet.md, "Commands of one machine"): why, as
   * the rest of "cal <name> …, not through a fleet". An explicit `--fleet` is refused (usage);
   * CAL_FLEET in the environment is ignored.
   */
  readonly local?: string;
  /** Parse, call the library, render; resolves with the exit code. */
  run(args: ArgValues<A>, options: OptionValues<O>, global: GlobalOptions): Promise<number>;
}

/** Declares a command; `const` keeps the literal types the option values are computed from. */
export function defineCommand<const O extends Record<string, OptionSpec>, const A extends readonly ArgSpec[]>(spec: CommandSpec<O, A>): CommandSpec<O, A> {
  return spec;
}

export function flagOf(key: string): string {
  return `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}
