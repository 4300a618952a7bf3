import { CalError } from '../../errors.js';
import type { PinnedCli } from '../../handles/schema.js';
import { stderrTail } from '../ndjson-process.js';
import { runExeca } from '../../util/spawn.js';

/**
 * What cal needs of the `cursor-agent` in front of it, read from its own `--help` (the flags in
 * cursor.com/docs/cli/reference/parameters, research §D): print mode with the stream-json
 * format, resume by chat id, workspace trust and the workspace itself. A release without them
 * is refused (`cli_unsupported`) before anything is sent.
 */
export interface CursorFeatures {
  pluginDir: boolean;
  approveMcps: boolean;
}

const REQUIRED: Array<[string, RegExp]> = [
  ['-p/--print', /(?:^|[\s,])(?:-p|--print)(?![\w-])/m],
  ['--output-format', /(?:^|[\s,])--output-format(?![\w-])/m],
  ['stream-json (an --output-format)', /stream-json/],
  ['--resume', /(?:^|[\s,])--resume(?![\w-])/m],
  ['--trust', /(?:^|[\s,])--trust(?![\w-])/m],
  ['--workspace', /(?:^|[\s,])--workspace(?![\w-])/m],
];

export async function probeCursor(cli: PinnedCli, env: Record<string, string>): Promise<CursorFeatures> {
  const res = await runExeca(cli.realPath, ['--help'], { env, reject: false, timeout: 30_000 });
  const help = `${res.stdout}\n${res.stderr}`;
  const missing = REQUIRED.filter(([, re]) => !re.test(help)).map(([name]) => name);
  if (missing.length > 0) {
    throw new CalError(
      'cli_unsupported',
      `cursor-agent ${cli.version} at ${cli.realPath} lacks ${missing.join(', ')} in its --help: cal drives it as \`-p --output-format stream-json --trust --workspace <dir> --resume <chat id>\`; update it (cursor-agent update)`,
    );
  }
  return {
    pluginDir: /(?:^|[\s,])--plugin-dir(?![\w-])/m.test(help),
    approveMcps: /(?:^|[\s,])--approve-mcps(?![\w-])/m.test(help),
  };
}

const CHAT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Mints the chat's id before its first turn: `create-chat` prints a fresh chat UUID on stdout
 * (its last line) and needs no network; every turn then runs with `--resume <id>`, so the id is
 * known before anything reaches the model.
 */
export async function createChat(cli: PinnedCli, env: Record<string, string>, cwd: string, trust: boolean): Promise<string> {
  const res = await runExeca(cli.realPath, ['create-chat', '--workspace', cwd, ...(trust ? ['--trust'] : [])], { cwd, env, reject: false, timeout: 60_000 });
  const last = res.stdout.split('\n').map((l) => l.trim()).filter(Boolean).at(-1) ?? '';
  if (res.exitCode === 0 && CHAT_ID.test(last)) return last;
  const said = stderrTail(`${res.stderr}\n${res.stdout}`, env);
  const refusal = refusalOf(said, cwd, trust);
  if (refusal) throw refusal;
  if (res.timedOut) throw new CalError('cli_unsupported', `cursor-agent create-chat printed no chat id within 60s: this release may not have create-chat (cursor-agent update)`);
  throw new CalError('cli_unsupported', `cursor-agent create-chat printed no chat id (exit ${res.exitCode}${said ? `: ${said}` : ''}): this release may not have create-chat (cursor-agent update)`);
}

/**
 * The two refusals Cursor prints before any model request, as clear typed errors: a folder it
 * will not trust (cal always passes --trust, so a release that still asks does not honour it) and
 * no login.
 */
export function refusalOf(said: string, cwd: string, trust = true): CalError | null {
  if (/Workspace Trust Required/i.test(said) && !trust) {
    return new CalError('untrusted_folder', `cursor-agent does not trust ${cwd} ("Workspace Trust Required"), and this session is never to trust a folder on your behalf (--no-trust): run \`cursor-agent\` in ${cwd} once and trust the workspace; nothing was sent`);
  }
  if (/Workspace Trust Required/i.test(said)) {
    return new CalError(
      'cli_unsupported',
      `cursor-agent refused ${cwd} as an untrusted workspace although cal passed --trust ("Workspace Trust Required"): this release does not honour --trust; trust the folder once by running cursor-agent in it interactively, or update it`,
    );
  }
  if (/Authentication required|Not authenticated|not logged in/i.test(said)) {
    return new CalError(
      'turn_failed',
      `cursor-agent is not signed in (${said}): run \`cursor-agent login\`, or set CURSOR_API_KEY in the environment cal runs in; the session is kept and can be continued once signed in`,
    );
  }
  return null;
}
