import { CalError } from '../../errors.js';
import type { PinnedCli } from '../../handles/schema.js';
import { runExeca } from '../../util/spawn.js';

/**
 * Agy (Google's Antigravity CLI) changes its flags between releases: 1.0.0 had `-p/--print`,
 * `--conversation`, `--add-dir`, `--dangerously-skip-permissions` and rejected `--output-format`
 * ("flag provided but not defined", exit 2); 1.1.8 added `--output-format text|json|stream-json`;
 * 1.2.x added `--print-timeout` (default 5 m) and `--model` (research §E). So cal reads what the
 * binary in front of it offers from its own `--help` (Go's flag package prints `-name`, either
 * dash works), and refuses one without stream-json output or resume by id.
 */
export interface AgyFeatures {
  /** The print flag as this release names it (`-p`, else `--print`). */
  printFlag: string;
  addDir: boolean;
  printTimeout: boolean;
  model: boolean;
  skipPermissions: boolean;
}

const flag = (name: string) => new RegExp(`(?:^|[\\s,])--?${name}(?![\\w-])`, 'm');

export async function probeAgy(cli: PinnedCli, env: Record<string, string>): Promise<AgyFeatures> {
  const res = await runExeca(cli.realPath, ['--help'], { env, reject: false, timeout: 30_000 });
  // Go's flag package prints its usage on stderr.
  const help = `${res.stdout}\n${res.stderr}`;
  const missing: string[] = [];
  if (!flag('output-format').test(help) || !/stream-json/.test(help)) missing.push('--output-format stream-json');
  if (!flag('conversation').test(help)) missing.push('--conversation');
  const short = flag('p').test(help);
  if (!short && !flag('print').test(help)) missing.push('-p/--print');
  if (missing.length > 0) {
    throw new CalError(
      'cli_unsupported',
      `agy ${cli.version} at ${cli.realPath} lacks ${missing.join(' and ')} in its --help: cal drives it as \`agy --output-format stream-json [--conversation <id>] -p <message>\` (stream-json arrived in 1.1.8); update it (agy update)`,
    );
  }
  return {
    printFlag: short ? '-p' : '--print',
    addDir: flag('add-dir').test(help),
    printTimeout: flag('print-timeout').test(help),
    model: flag('model').test(help),
    skipPermissions: flag('dangerously-skip-permissions').test(help),
  };
}
