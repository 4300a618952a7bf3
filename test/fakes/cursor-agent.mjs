#!/usr/bin/env node
// A stand-in for Cursor CLI (`cursor-agent`) for cal's tests, written from its documented interface
// only (../shared/research/adapters-gemini-cursor-agy-claude-structured.md §D: cursor.com's
// parameter and output-format references and third-party captures of the real CLI). What it
// follows:
//   --version, --help                      version `YYYY.MM.DD-<commit>`; commander-style help
//   create-chat [--workspace P] [--trust]  prints a fresh chat UUID on stdout, needs no login
//   -p --output-format stream-json --trust --workspace P --resume <id> [--model M] [--force]
//      [--mode plan|ask] [--plugin-dir D] [--approve-mcps] -- <prompt>
//                                          one turn: NDJSON events system/init, user, assistant,
//                                          tool_call started/completed, result; exit 0
//   print mode in an untrusted folder      "Workspace Trust Required … Pass --trust, --yolo, or -f",
//                                          exit 1, before any model request
//   no login (and no CURSOR_API_KEY)        "Authentication required. Please run 'agent login'
//                                          first" on stderr, exit 1
//   a failed turn                          the message on stderr, exit 1, no result event (or a
//                                          result with is_error: true)
//   the chat store                         <CURSOR_CONFIG_DIR | $XDG_CONFIG_HOME/cursor | ~/.cursor>
//                                          /chats/<md5(workspace)>/<chat id>/meta.json (schemaVersion 1)
//                                          and store.db. The real store.db is SQLite; this one holds
//                                          the fake's history as JSON lines (cal never reads it).
//   trust marker                           ~/.cursor/projects/<slug>/.workspace-trusted
//
// What is a test control, not Cursor behaviour (environment):
//   FAKE_CURSOR_LOG=<file>        every invocation appends {argv, cwd, apiKeyInEnv} (never a value)
//   FAKE_CURSOR_VERSION=<v>       the version printed
//   FAKE_CURSOR_HELP=no-trust     a release whose --help (and parser) has no --trust
//   FAKE_CURSOR_AUTH=logged-out   no stored login: only CURSOR_API_KEY signs in
//   FAKE_CURSOR_TRUST=ignored     a release that refuses an untrusted folder even with --trust
// and directives in the prompt: [[fake:fail]] (stderr + exit 1, no result), [[fake:error-result]]
// (a result with is_error), [[fake:shell=<command>]] (a preamble, a shell tool call, the answer),
// [[fake:delay=<ms>]] (a slow model: the turn waits that long after its user event; the stand-in
// has no SIGINT handler of its own, so a Ctrl-C meanwhile ends it by the signal).
// The answer: "I will remember the codeword X." / "The codeword was X." (from the chat's own
// history) / "You said: <prompt>".
import { execSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const argv = process.argv.slice(2);
const env = process.env;
const version = env.FAKE_CURSOR_VERSION || '2026.09.18-9a7762b';
const hasTrustFlag = env.FAKE_CURSOR_HELP !== 'no-trust';

if (env.FAKE_CURSOR_LOG) {
  fs.appendFileSync(env.FAKE_CURSOR_LOG, JSON.stringify({ argv, cwd: process.cwd(), apiKeyInEnv: Boolean(env.CURSOR_API_KEY) }) + '\n');
}

const HELP = `Usage: agent [options] [command] [prompt...]

Start the Cursor Agent

Arguments:
  prompt                       Initial prompt for the agent

Options:
  -v, --version                Output the version number
  --api-key <key>              API key for authentication (can also use CURSOR_API_KEY env var)
  -H, --header <header>        Add custom header to agent requests
  -p, --print                  Print responses to console (for scripts or non-interactive use)
  --output-format <format>     Output format (only works with --print): text | json | stream-json (default: "text")
  --stream-partial-output      Stream partial output as individual text deltas (only works with --print and stream-json format)
  -c, --cloud                  Start in cloud mode
  --resume [chatId]            Resume a chat session
  --continue                   Continue previous session
  --model <model>              Model to use
  --mode <mode>                Start in the given execution mode: plan, ask
  --plan                       Start in plan mode (shorthand for --mode=plan)
  --list-models                List available models and exit
  -f, --force                  Force allow commands unless explicitly denied
  --yolo                       Alias for --force
  --sandbox <mode>             Explicitly enable or disable sandbox mode: enabled, disabled
  --approve-mcps               Automatically approve all MCP servers
${hasTrustFlag ? '  --trust                      Trust the current workspace without prompting\n' : ''}  --workspace <path>           Workspace directory to use
  -w, --worktree [name]        Start in an isolated git worktree
  --plugin-dir <path>          Load a plugin from a local directory
  -n, --name <name>            Name for the session
  -h, --help                   Display help for command

Commands:
  login                        Authenticate with Cursor
  logout                       Sign out and clear stored authentication
  status|whoami                View authentication status
  about                        Display version, system, and account information
  models                       List available models for this account
  mcp                          Manage MCP servers
  update                       Update Cursor Agent to the latest version
  create-chat                  Create a new empty chat and return its ID
  ls                           Resume a chat session
  resume [chatId]              Resume the latest chat session
  help [command]               Display help for command
`;

function fail(message, code = 1) {
  process.stderr.write(message.endsWith('\n') ? message : `${message}\n`);
  process.exit(code);
}

const VALUE_OPTIONS = new Set(['--api-key', '-H', '--header', '--output-format', '--model', '--mode', '--sandbox', '--workspace', '--plugin-dir', '-n', '--name']);
const FLAG_OPTIONS = new Set(['-p', '--print', '--stream-partial-output', '-c', '--cloud', '--continue', '--plan', '--list-models', '-f', '--force', '--yolo', '--approve-mcps', ...(hasTrustFlag ? ['--trust'] : [])]);

function parse(args) {
  const opts = {};
  const positional = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--') {
      positional.push(...args.slice(i + 1));
      break;
    }
    if (a === '--resume') {
      // An optional value: the next argument when it is not another option.
      if (i + 1 < args.length && !args[i + 1].startsWith('-')) opts['--resume'] = args[++i];
      else opts['--resume'] = true;
      continue;
    }
    if (VALUE_OPTIONS.has(a)) {
      if (i + 1 >= args.length) fail(`error: option '${a} <value>' argument missing`);
      opts[a] = args[++i];
      continue;
    }
    if (FLAG_OPTIONS.has(a)) {
      opts[a] = true;
      continue;
    }
    if (a.startsWith('-')) fail(`error: unknown option '${a}'`);
    positional.push(a);
  }
  return { opts, positional };
}

function configRoot() {
  if (env.CURSOR_CONFIG_DIR) return env.CURSOR_CONFIG_DIR;
  if (env.XDG_CONFIG_HOME) return path.join(env.XDG_CONFIG_HOME, 'cursor');
  return path.join(env.HOME || os.homedir(), '.cursor');
}

function slug(cwd) {
  return cwd.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
}

function emit(event) {
  process.stdout.write(JSON.stringify(event) + '\n');
}

if (argv[0] === '--version' || argv[0] === '-v') {
  process.stdout.write(`${version}\n`);
  process.exit(0);
}
if (argv[0] === '--help' || argv[0] === '-h' || argv.length === 0) {
  process.stdout.write(HELP);
  process.exit(0);
}

if (argv[0] === 'create-chat') {
  parse(argv.slice(1));
  process.stdout.write(`${randomUUID()}\n`);
  process.exit(0);
}

const { opts, positional } = parse(argv);
const print = opts['-p'] || opts['--print'];
if (!print) fail('the interactive mode needs a terminal (this stand-in has only print mode)');
const workspace = path.resolve(opts['--workspace'] ?? process.cwd());
const prompt = positional.join(' ');
if (!prompt) fail('Error: No prompt provided for print mode. Please provide a prompt.');

// Trust comes first: in print mode an untrusted folder is refused before any model request.
const trusted =
  ((opts['--trust'] && env.FAKE_CURSOR_TRUST !== 'ignored') || opts['-f'] || opts['--force'] || opts['--yolo']) ||
  fs.existsSync(path.join(env.HOME || os.homedir(), '.cursor', 'projects', slug(workspace), '.workspace-trusted'));
if (!trusted) {
  fail(`⚠ Workspace Trust Required
  Cursor Agent can execute code and access files in this directory.
  To proceed, you can either:
    • Run 'agent' interactively to decide
    • Pass --trust, --yolo, or -f if you trust this directory`);
}
if (env.FAKE_CURSOR_AUTH === 'logged-out' && !env.CURSOR_API_KEY && !opts['--api-key']) {
  fail("Authentication required. Please run 'agent login' first");
}
if (opts['--output-format'] !== 'stream-json') fail('this stand-in prints only --output-format stream-json');
if (typeof opts['--resume'] !== 'string') fail('this stand-in runs only --resume <chatId>');

const chatId = opts['--resume'];
const chatDir = path.join(configRoot(), 'chats', createHash('md5').update(workspace).digest('hex'), chatId);
const storeFile = path.join(chatDir, 'store.db');
const history = fs.existsSync(storeFile)
  ? fs.readFileSync(storeFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
  : [];

if (opts['--plugin-dir']) {
  const dir = opts['--plugin-dir'];
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, '.cursor-plugin', 'plugin.json'), 'utf8'));
  const mcp = JSON.parse(fs.readFileSync(path.join(dir, 'mcp.json'), 'utf8'));
  if (!manifest.name || typeof mcp.mcpServers !== 'object') fail(`invalid plugin at ${dir}`);
  if (env.FAKE_CURSOR_LOG) {
    fs.appendFileSync(env.FAKE_CURSOR_LOG, JSON.stringify({ plugin: path.basename(dir), mcpServers: Object.keys(mcp.mcpServers) }) + '\n');
  }
}

const started = Date.now();
const session = { session_id: chatId };
emit({ type: 'system', subtype: 'init', apiKeySource: env.CURSOR_API_KEY ? 'env' : 'login', cwd: workspace, session_id: chatId, model: opts['--model'] ?? 'Auto', permissionMode: 'default' });
emit({ type: 'user', message: { role: 'user', content: [{ type: 'text', text: prompt }] }, ...session });
const slow = /\[\[fake:delay=(\d+)\]\]/.exec(prompt);
if (slow) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Number(slow[1]));

if (/\[\[fake:fail\]\]/.test(prompt)) {
  fail('Error: stream closed: the connection to the agent ended unexpectedly (a failed turn)');
}
if (/\[\[fake:error-result\]\]/.test(prompt)) {
  emit({ type: 'result', subtype: 'error', is_error: true, duration_ms: Date.now() - started, duration_api_ms: 0, result: 'The model returned an error for this request', ...session, request_id: randomUUID() });
  process.exit(1);
}

const texts = [];
const say = (text) => {
  texts.push(text);
  emit({ type: 'assistant', message: { role: 'assistant', content: [{ type: 'text', text }] }, ...session });
};
const shell = /\[\[fake:shell=([^\]]+)\]\]/.exec(prompt);
if (shell) {
  say('Running it.');
  const callId = randomUUID();
  const args = { command: shell[1] };
  emit({ type: 'tool_call', subtype: 'started', call_id: callId, tool_call: { shellToolCall: { args } }, ...session });
  const stdout = execSync(shell[1], { cwd: workspace, encoding: 'utf8' });
  emit({ type: 'tool_call', subtype: 'completed', call_id: callId, tool_call: { shellToolCall: { args, result: { success: { exitCode: 0, stdout, stderr: '' } } } }, ...session });
}

let answer;
const remember = /remember the codeword (\w+)/i.exec(prompt);
if (remember) {
  answer = `I will remember the codeword ${remember[1]}.`;
} else if (/what was the codeword/i.test(prompt)) {
  const said = [...history].reverse().map((h) => /remember the codeword (\w+)/i.exec(h.user)).find(Boolean);
  answer = said ? `The codeword was ${said[1]}.` : 'I know no codeword.';
} else {
  answer = `You said: ${prompt}`;
}
say(answer);

fs.mkdirSync(chatDir, { recursive: true });
fs.appendFileSync(storeFile, JSON.stringify({ user: prompt, assistant: answer }) + '\n');
const metaFile = path.join(chatDir, 'meta.json');
const createdAtMs = fs.existsSync(metaFile) ? JSON.parse(fs.readFileSync(metaFile, 'utf8')).createdAtMs : started;
fs.writeFileSync(metaFile, JSON.stringify({ schemaVersion: 1, cwd: workspace, createdAtMs, updatedAtMs: Date.now(), hasConversation: true, isSubagent: false, title: prompt.slice(0, 40) }));

emit({
  type: 'result',
  subtype: 'success',
  is_error: false,
  duration_ms: Date.now() - started,
  duration_api_ms: 1,
  result: texts.join(''),
  ...session,
  request_id: randomUUID(),
  usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 },
});
process.exit(0);
