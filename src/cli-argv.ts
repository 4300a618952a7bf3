/**
 * What cal's command line says before commander is loaded: which command runs (cli.ts loads only
 * that command's module) and, for cal's entry, whether it is a continue whose CLI can be started
 * early (commands/early-start.ts). Commander is the authority once loaded; these only read ahead.
 */

/** Where the command word is in an argv (after node and the script), past the global options; -1 when there is none. */
export function commandIndex(args: readonly string[]): number {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--state-dir' || arg === '--fleet' || arg === '--fleet-password-file') i++;
    else if (arg === '--') return -1;
    else if (!arg.startsWith('-')) return i;
  }
  return -1;
}

/** The command word of an argv (after node and the script), skipping the global options; null when there is none. */
export function commandWord(args: readonly string[]): string | null {
  const i = commandIndex(args);
  return i === -1 ? null : (args[i] as string);
}

/** The global `--state-dir` (either form, the last one given, as commander takes it anywhere before `--`); undefined without one. */
export function stateDirArg(args: readonly string[]): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--') break;
    if (arg === '--state-dir') value = args[++i];
    else if (arg.startsWith('--state-dir=')) value = arg.slice('--state-dir='.length);
  }
  return value;
}

/** Whether the command runs through a fleet (`--fleet` in either form, or CAL_FLEET): nothing of it runs on this machine. */
export function fleetArg(args: readonly string[], env: NodeJS.ProcessEnv): boolean {
  const end = args.indexOf('--');
  return Boolean(env.CAL_FLEET) || (end === -1 ? args : args.slice(0, end)).some((a) => a === '--fleet' || a.startsWith('--fleet=') || a.startsWith('--fleet-password-file'));
}
