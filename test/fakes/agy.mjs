#!/usr/bin/env node
// A stand-in for Agy (Google's Antigravity CLI) for cal's tests, written from its documented
// interface only (../shared/research/adapters-gemini-cursor-agy-claude-structured.md §E: the 1.1.8
// release notes, docs mirrors and the parsers of third parties). What it follows:
//   flags                  Go's flag package: `-name` or `--name`, `-name value` or `-name=value`;
//                          an unknown flag is "flag provided but not defined: -x", exit 2;
//                          `-p`/`--print` is a string flag that takes the prompt
//   1.0.0                  -p/--print, --conversation, -c/--continue, --add-dir, --sandbox,
//                          --dangerously-skip-permissions (no --output-format)
//   1.1.8                  adds --output-format text|json|stream-json and --json-schema
//   1.2.x                  adds --input-format, --print-timeout (default 5m), --model, --agent
//   stream-json            one object per line under an `event` key: init (conversation_id; init
//                          {model, cwd, permission_mode, agent, tools}), step_update (step_index,
//                          state ACTIVE|DONE, step_type user_input|agent_response|tool, text_delta,
//                          tool_name, tool_info), result (conversation_id, status "SUCCESS",
//                          response, error, usage)
//   ids                    a new conversation's id is agy's own; --conversation <id> resumes; the
//                          exit hint `agy --conversation=<id>` goes to stderr
//   storage                ~/.gemini/antigravity-cli/conversations/<id>.db (SQLite in the real CLI;
//                          here the fake's history as JSON lines, which cal never reads),
//                          brain/<id>/.system_generated/logs/transcript_full.jsonl (steps with
//                          step_index, source, type, content), cache/last_conversations.json
//
// What is a test control, not agy behaviour (environment):
//   FAKE_AGY_LOG=<file>       every invocation appends {argv, cwd}
//   FAKE_AGY_VERSION=<v>      the release it behaves as (default 1.2.14)
// and directives in the prompt: [[fake:fail]] (stderr + exit 1, no result), [[fake:error-result]]
// (a result whose status is not SUCCESS), [[fake:shell=<command>]] (a preamble, a tool step, the
// answer), [[fake:empty-response]] (result.response empty, as after some tool turns) and
// [[fake:delay=<ms>]] (a slow model: the turn waits that long after its user step; the stand-in
// has no SIGINT handler of its own, so a Ctrl-C meanwhile ends it by the signal).
// The answer: "I will remember the codeword X." / "The codeword was X." (from the conversation's
// own history) / "You said: <prompt>".
import { execSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const env = process.env;
const version = env.FAKE_AGY_VERSION || '1.2.14';
const [major, minor, patch] = version.split('.').map(Number);
const atLeast = (a, b, c) => major > a || (major === a && (minor > b || (minor === b && patch >= c)));
const argv = process.argv.slice(2);

if (env.FAKE_AGY_LOG) fs.appendFileSync(env.FAKE_AGY_LOG, JSON.stringify({ argv, cwd: process.cwd() }) + '\n');

const STRING_FLAGS = {
  p: 'Run a single prompt non-interactively and print the response',
  print: 'Run a single prompt non-interactively and print the response',
  conversation: 'Resume the conversation with this id',
  'add-dir': 'Add a directory to the workspace',
};
const BOOL_FLAGS = {
  c: 'Continue the most recent conversation of this workspace',
  continue: 'Continue the most recent conversation of this workspace',
  sandbox: 'Apply terminal restrictions',
  'dangerously-skip-permissions': 'Approve every tool call without asking',
  version: 'Print the version and exit',
};
if (atLeast(1, 1, 8)) {
  STRING_FLAGS['output-format'] = 'Output format for print mode: text, json or stream-json (default "text")';
  STRING_FLAGS['json-schema'] = 'A JSON schema (inline or a file) the structured output must follow';
}
if (atLeast(1, 2, 0)) {
  STRING_FLAGS['input-format'] = 'Input format: text or stream-json (default "text")';
  STRING_FLAGS['print-timeout'] = 'Longest a print-mode run may take (default 5m0s)';
  STRING_FLAGS.model = 'Model to use';
  STRING_FLAGS.agent = 'Agent to use (.agents/agents/<name>/agent.md)';
}

function usage() {
  const lines = ['Usage of agy:'];
  const names = [...Object.keys(STRING_FLAGS), ...Object.keys(BOOL_FLAGS)].sort();
  for (const name of names) {
    if (name in STRING_FLAGS) lines.push(`  -${name} string`, `    \t${STRING_FLAGS[name]}`);
    else lines.push(`  -${name}`, `    \t${BOOL_FLAGS[name]}`);
  }
  return lines.join('\n') + '\n';
}

function fail(message, code = 1) {
  process.stderr.write(message.endsWith('\n') ? message : `${message}\n`);
  process.exit(code);
}

const opts = {};
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (!a.startsWith('-') || a === '-' || a === '--') break;
  const body = a.replace(/^--?/, '');
  const eq = body.indexOf('=');
  const name = eq === -1 ? body : body.slice(0, eq);
  if (name === 'h' || name === 'help') {
    process.stderr.write(usage());
    process.exit(0);
  }
  if (name in STRING_FLAGS) {
    if (eq !== -1) opts[name] = body.slice(eq + 1);
    else if (i + 1 < argv.length) opts[name] = argv[++i];
    else fail(`flag needs an argument: -${name}\n${usage()}`, 2);
  } else if (name in BOOL_FLAGS) {
    opts[name] = eq === -1 ? true : body.slice(eq + 1) !== 'false';
  } else {
    fail(`flag provided but not defined: -${name}\n${usage()}`, 2);
  }
}

if (opts.version) {
  process.stdout.write(`${version}\n`);
  process.exit(0);
}
const prompt = opts.p ?? opts.print;
if (prompt === undefined) fail('the interactive mode needs a terminal (this stand-in has only print mode)');

const root = path.join(env.HOME || os.homedir(), '.gemini', 'antigravity-cli');
const id = opts.conversation ?? randomUUID();
const dbFile = path.join(root, 'conversations', `${id}.db`);
const history = fs.existsSync(dbFile) ? fs.readFileSync(dbFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
const stepLog = path.join(root, 'brain', id, '.system_generated', 'logs', 'transcript_full.jsonl');
const format = opts['output-format'] ?? 'text';
let stepIndex = history.length * 10;
// FAKE_AGY_ENVELOPE=type names each event under `type` instead of `event` (parsers disagree).
const emit = (event) => {
  if (format !== 'stream-json') return;
  const { event: name, ...rest } = event;
  const line = env.FAKE_AGY_ENVELOPE === 'type' ? { type: name, ...rest } : event;
  process.stdout.write(JSON.stringify(line) + '\n');
};
const step = (fields) => emit({ event: 'step_update', step_update: { conversation_id: id, ...fields } });
const logStep = (type, source, content) => {
  fs.mkdirSync(path.dirname(stepLog), { recursive: true });
  fs.appendFileSync(stepLog, JSON.stringify({ step_index: stepIndex, source, type, content }) + '\n');
};

const started = Date.now();
emit({ event: 'init', conversation_id: id, init: { model: opts.model ?? 'default', cwd: process.cwd(), permission_mode: opts['dangerously-skip-permissions'] ? 'bypass' : 'default', agent: 'default', tools: [] } });
step({ step_index: stepIndex, state: 'DONE', step_type: 'user_input', text_delta: prompt });
logStep('USER_INPUT', 'USER', prompt);
stepIndex++;
const slow = /\[\[fake:delay=(\d+)\]\]/.exec(prompt);
if (slow) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Number(slow[1]));

if (/\[\[fake:fail\]\]/.test(prompt)) fail('Error: the language server closed the stream (a failed turn)');
if (/\[\[fake:error-result\]\]/.test(prompt)) {
  emit({ event: 'result', result: { conversation_id: id, status: 'ERROR', response: '', error: 'the model returned an error for this request', duration_seconds: 0.1, num_turns: 1 } });
  process.stderr.write(`agy --conversation=${id}\n`);
  process.exit(1);
}

const say = (text) => {
  const half = Math.ceil(text.length / 2);
  step({ step_index: stepIndex, state: 'ACTIVE', step_type: 'agent_response', text_delta: text.slice(0, half) });
  step({ step_index: stepIndex, state: 'ACTIVE', step_type: 'agent_response', text_delta: text.slice(half) });
  step({ step_index: stepIndex, state: 'DONE', step_type: 'agent_response' });
  logStep('PLANNER_RESPONSE', 'MODEL', text);
  stepIndex++;
};
const shell = /\[\[fake:shell=([^\]]+)\]\]/.exec(prompt);
if (shell) {
  say('Running it.');
  const parameters = { command: shell[1] };
  step({ step_index: stepIndex, state: 'ACTIVE', step_type: 'tool', tool_name: 'run_command', tool_info: { name: 'run_command', parameters } });
  const output = execSync(shell[1], { encoding: 'utf8' });
  step({ step_index: stepIndex, state: 'DONE', step_type: 'tool', tool_name: 'run_command', tool_info: { name: 'run_command', parameters, output } });
  logStep('TOOL_RESPONSE', 'SYSTEM', output);
  stepIndex++;
}

let answer;
const remember = /remember the codeword (\w+)/i.exec(prompt);
if (remember) answer = `I will remember the codeword ${remember[1]}.`;
else if (/what was the codeword/i.test(prompt)) {
  const said = [...history].reverse().map((h) => /remember the codeword (\w+)/i.exec(h.user)).find(Boolean);
  answer = said ? `The codeword was ${said[1]}.` : 'I know no codeword.';
} else answer = `You said: ${prompt}`;
say(answer);

fs.mkdirSync(path.dirname(dbFile), { recursive: true });
fs.appendFileSync(dbFile, JSON.stringify({ user: prompt, assistant: answer }) + '\n');
const cache = path.join(root, 'cache', 'last_conversations.json');
fs.mkdirSync(path.dirname(cache), { recursive: true });
const last = fs.existsSync(cache) ? JSON.parse(fs.readFileSync(cache, 'utf8')) : {};
fs.writeFileSync(cache, JSON.stringify({ ...last, [process.cwd()]: id }));

const response = /\[\[fake:empty-response\]\]/.test(prompt) ? '' : answer;
emit({
  event: 'result',
  result: {
    conversation_id: id,
    status: 'SUCCESS',
    response,
    error: '',
    duration_seconds: (Date.now() - started) / 1000,
    num_turns: 1,
    usage: { input_tokens: 10, output_tokens: 5, thinking_tokens: 0, cache_read_tokens: 0, total_tokens: 15 },
  },
});
if (format !== 'stream-json') process.stdout.write(`${answer}\n`);
process.stderr.write(`agy --conversation=${id}\n`);
process.exit(0);
