import { randomBytes } from '../util/random.js';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CalError } from '../errors.js';
import { ensurePrivateDir } from '../util/private-dir.js';

/**
 * How a pane's command line gets to the pane. tmux carries a command to its server in one
 * message of at most 16 KB, so a long first message in argv failed with "command too long".
 * The argv goes in a small shell script instead (0600, in the session's private folder) that
 * removes itself and `exec`s the CLI: no process is left between the pane and the CLI, and the
 * environment still travels as before (never in a file). The kernel still limits one argument.
 */
const MAX_ARG_BYTES = 128 * 1024 - 1;
const MAX_ARGV_BYTES = 1024 * 1024;

/** Single-quoted for sh: every byte literal, a quote as '\''. */
function shellQuote(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

export function checkArgvSize(argv: string[], what: string): void {
  const longest = Math.max(0, ...argv.map((a) => Buffer.byteLength(a)));
  const total = argv.reduce((n, a) => n + Buffer.byteLength(a) + 1, 0);
  if (longest > MAX_ARG_BYTES || total > MAX_ARGV_BYTES) {
    throw new CalError(
      'usage',
      `${what} is ${Math.ceil(longest / 1024)} KB; a message that starts or resumes a session goes to the CLI in its argv, which takes at most ${Math.floor(MAX_ARG_BYTES / 1024)} KB: send a longer one into the live pane, or put it in a file and ask the agent to read it`,
    );
  }
}

/** The argv that runs `argv` in a pane through a self-removing launch script in `dir`. */
export async function paneCommand(dir: string, argv: string[]): Promise<string[]> {
  await ensurePrivateDir(dir);
  const file = path.join(dir, `launch-${randomBytes(6).toString('hex')}.sh`);
  const script = `rm -f -- ${shellQuote(file)}\nexec ${argv.map(shellQuote).join(' ')}\n`;
  // Synchronous: a few small system calls on the way to every launch, cheaper than three
  // thread-pool round trips (about 4 ms after a lost pane, measured).
  try {
    writeFileSync(file, script, { mode: 0o600, flag: 'wx' });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    rmSync(file, { force: true });
    if (err.code === 'ENOSPC' || err.code === 'EDQUOT' || err.code === 'EROFS') {
      throw new CalError('usage', `cannot write ${file}: ${err.code === 'EROFS' ? 'the file system is read-only' : 'no space left on the device'}; fix that, then run cal recover to settle unfinished turns`);
    }
    throw err;
  }
  return ['/bin/sh', file];
}
