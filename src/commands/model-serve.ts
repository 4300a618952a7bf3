/** `cal model serve`: run the scripted model server in the foreground until SIGINT/SIGTERM. */
import { CalError, toCalError } from '../errors.js';
import { isLoopbackHost, startModelServer } from '../model/server.js';
import { openStateRoot, recordServedModel } from '../sessions/served-model.js';
import { resolveStateDir } from '../state/paths.js';
import { defineCommand, type OptionSpec, type OptionValues } from './spec.js';

const options = {
  host: { value: '<host>', help: 'address to bind', default: '127.0.0.1' },
  port: { value: '<port>', help: 'port (default: any free one)' },
  log: { value: '<file>', help: 'append every request to this JSONL file' },
  allowRemote: { help: 'allow a non-loopback --host' },
} as const satisfies Record<string, OptionSpec>;

export type ModelServeOptions = Partial<OptionValues<typeof options>>;

export const command = defineCommand({
  name: 'model serve',
  groupHelp: 'the scripted model server',
  help: 'serve the scripted model on 127.0.0.1; prints its base URL and runs until stopped',
  local: 'serves the scripted model from this machine',
  args: [],
  options,
  run: (_args, opts, global): Promise<number> => runModelServe(opts, global.stateDir),
});

/** Why the server could not listen, as a usage error naming the address (a busy port is the usual one). */
/**
 * Prints an error as every command does (`cal: <kind>: <message>`) and returns its exit code.
 * Not common.ts's renderError: that module loads the whole library, which a model server needs none of.
 */
function renderError(err: unknown, _opts: object): number {
  const e = toCalError(err);
  process.stderr.write(`cal: ${e.kind}: ${e.message}\n`);
  return e.exitCode;
}

function bindError(err: unknown, host: string, port: number): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  const why: Record<string, string> = { EADDRINUSE: 'the port is in use', EACCES: 'permission denied (a port below 1024?)', EADDRNOTAVAIL: 'no such local address' };
  return code && why[code] ? new CalError('usage', `cannot listen on ${host}:${port}: ${why[code]}`) : err;
}

function parsePort(value: string | undefined): number | null {
  if (value === undefined || value === '') return 0;
  const s = String(value).trim();
  if (!/^\d+$/.test(s)) return null;
  const n = Number(s);
  return n <= 65535 ? n : null;
}

/**
 * What `cal model env` configures, one line per CLI it can point at the scripted model (every
 * registered CLI but the live-only ones: `scriptedShellEnv` writes the files named here).
 */
export function servedModelHints(url: string): string[] {
  return [
    `  Claude Code:    ANTHROPIC_BASE_URL=${url} ANTHROPIC_AUTH_TOKEN=dummy`,
    `  Codex:          [model_providers.mock] base_url = "${url}/v1", wire_api = "responses"`,
    `  Gemini CLI:     GOOGLE_GEMINI_BASE_URL=${url} GEMINI_API_KEY=dummy`,
    `  Pi:             models.json baseUrl "${url}/v1", api "openai-completions"`,
    `  Qwen Code:      OPENAI_BASE_URL=${url}/v1 OPENAI_API_KEY=dummy, settings.json security.auth.selectedType "openai"`,
    `  Copilot CLI:    COPILOT_PROVIDER_BASE_URL=${url}/v1 COPILOT_PROVIDER_TYPE=openai COPILOT_MODEL=scripted-model COPILOT_OFFLINE=true`,
    `  OpenCode:       OPENCODE_CONFIG with provider "scripted" options.baseURL "${url}/v1"`,
    `  Cline CLI:      cline auth -p openai -k dummy -m scripted-model -b ${url}/v1 (ACP: CLINE_PROVIDER=openai-compatible CLINE_API_KEY=dummy)`,
    `  Kilo Code CLI:  KILO_CONFIG with provider "scripted" options.baseURL "${url}/v1"`,
  ];
}

function resolveStateDirOrError(stateDir: string | undefined): string | number {
  try {
    return resolveStateDir(stateDir);
  } catch (err) {
    return renderError(err, {});
  }
}

/**
 * Start the server, print its base URL as the first stdout line, and serve until SIGINT or
 * SIGTERM. Resolves with the exit code: 0 after a signal, 2 (usage) for bad options or an
 * address it cannot bind (a port in use); errors as every command prints them.
 */
export async function runModelServe(opts: ModelServeOptions, stateDir?: string): Promise<number> {
  const host = opts.host ?? '127.0.0.1';
  const port = parsePort(opts.port);
  if (port === null) return renderError(new CalError('usage', `--port must be a whole number 0..65535, got ${String(opts.port)}`), {});
  if (!isLoopbackHost(host) && !opts.allowRemote) {
    return renderError(new CalError('usage', `${host} is not a loopback address; the scripted model has no authentication. Pass --allow-remote to bind it anyway.`), {});
  }
  const root = resolveStateDirOrError(stateDir);
  if (typeof root === 'number') return root;
  try {
    await openStateRoot(root);
  } catch (err) {
    return renderError(err, {});
  }
  let server;
  try {
    // Nobody reads the in-process log of a foreground server; keep it small (the --log file has everything).
    server = await startModelServer({ host, port, allowRemote: opts.allowRemote === true, maxLogEntries: 100, ...(opts.log ? { logFile: opts.log } : {}) });
  } catch (err) {
    return renderError(bindError(err, host, port), {});
  }
  // Listen for the stop signals before announcing the URL: a script may send one as soon as it reads it.
  const stopped = new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  // Recorded under the state dir so `cal model env` finds this server without its URL; a server
  // already recorded there keeps its record.
  let record;
  try {
    record = await recordServedModel(root, server.url);
  } catch (err) {
    await server.close();
    return renderError(err, {});
  }
  process.stdout.write(`${server.url}\n`);
  if (!record.recorded) {
    process.stderr.write(
      `note: another cal model serve (pid ${record.other.pid}, ${record.other.url}) is recorded in ${root}: \`cal model env\` points at that one; for this one run: cal model env --url ${server.url}\n`,
    );
  }
  if (!isLoopbackHost(host)) process.stderr.write('warning: serving on a non-loopback address without authentication\n');
  process.stderr.write(
    [
      `Scripted model ready. Point the CLIs at it from another shell: eval "$(cal model env${record.recorded ? '' : ` --url ${server.url}`})"`,
      ...servedModelHints(server.url),
      'Stop with Ctrl+C.',
      '',
    ].join('\n'),
  );
  await stopped;
  if (record.recorded) await record.forget();
  await server.close();
  return 0;
}
