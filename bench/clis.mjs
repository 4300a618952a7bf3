#!/usr/bin/env node
// Benchmark (not a test): for every CLI and both of its transports, `cal continue` against what a
// script would run instead, side by side in one run against cal's scripted model:
//   tmux:        cal continue into the session's live pane   vs  the CLI's own headless resume
//   structured:  cal continue on the structured transport    vs  the same command cal ran for it
// "The same command" is taken from cal itself: cal's timing trace (CAL_TRACE_TIMING) records the
// argv, the variables it set and the stdin of each structured turn, and the bare side replays the
// last one on a session of its own (its id, transcript, folder and cal's per-session folder put in
// place of cal's). That bare command is also the CLI's headless resume the live pane is compared
// with. Turns come in rounds of three (bare, live, structured) whose order rotates, each once the
// one before has exited, so all three see the same load and the same history length.
//
// Each cal turn's phases come from its trace: cal's start (to its entry), its module graph, the
// turn's record and lock, the draft check (live), the send, the CLI's turn, and cal's part after
// the CLI's record of the answer (the `end-read` mark, or the CLI's exit, to cal's exit).
//
//   npm run build && node bench/clis.mjs [provider …] [--json FILE]     (BENCH_RUNS=7 by default)
// Under the shared lock on a shared machine: flock /tmp/cal-realcli.lock node bench/clis.mjs
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { calTimed, binDir, median, must, root, timed, untilQuiet, withoutCaBundle } from './lib.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 7);
export const PROVIDERS = ['claude-code', 'codex', 'gemini', 'pi', 'qwen', 'copilot', 'opencode'];
/** The targets of issue 51 and earlier rounds; a row without one is measured and shown only. */
export const TARGETS = { 'claude-code tmux': 0.3, 'claude-code structured': 1.1, 'codex structured': 1.1, 'pi structured': 1.15, 'gemini structured': 1.15 };
const dist = (p) => import(path.join(root, 'dist', p));

/** Whether a CLI's output (text or JSON events, possibly in streamed pieces) says the codeword. */
function recalled(stdout) {
  if (stdout.includes('The codeword was BENCH.')) return true;
  const pieces = [];
  for (const line of stdout.split('\n')) {
    try {
      collect(JSON.parse(line), pieces);
    } catch {
      // not JSON
    }
  }
  return pieces.join('').includes('The codeword was BENCH.');
}

/**
 * The strings of an event that carry text (`content`, `text`, `delta`, `result`), in order: every
 * other field (a type, a role, a timestamp) between two pieces of a streamed answer kept the
 * pieces apart (Gemini's "The cod", "eword wa", "s BENCH." were never found).
 */
const TEXT_KEYS = new Set(['content', 'text', 'delta', 'result']);
function collect(value, out, key = 'content') {
  if (typeof value === 'string') {
    if (TEXT_KEYS.has(key)) out.push(value);
  } else if (Array.isArray(value)) for (const v of value) collect(v, out, key);
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) collect(v, out, k);
}

/** The detail lines of a trace's text (`<t> <pid> <name> <json>`), in order, as [name, value]. */
function detailLines(text) {
  return text.split('\n').flatMap((line) => {
    const m = /^\S+ \S+ (\S+) (.*)$/.exec(line);
    return m ? [[m[1], JSON.parse(m[2])]] : [];
  });
}

/** The detail lines of a trace, the last of each name. */
async function traceDetails(trace) {
  return Object.fromEntries(detailLines(await fs.readFile(trace, 'utf8').catch(() => '')));
}

/** The handle as `cal inspect --json` shows it: its native id, transcript and per-session folder. */
async function view(calRun, handle, state) {
  const v = JSON.parse(must(await calRun(['inspect', handle, '--json']), 'cal inspect').stdout);
  return { native: v.provider.nativeSessionId, transcript: v.provider.transcript?.path ?? null, cwd: v.config?.workingDir?.path ?? null, home: path.join(state, 'homes', handle) };
}

/** Replaces every occurrence of each key by its value in a string, an array or an object's values. */
function swap(value, pairs) {
  if (typeof value === 'string') return pairs.reduce((s, [from, to]) => (from ? s.split(from).join(to) : s), value);
  if (Array.isArray(value)) return value.map((v) => swap(v, pairs));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, swap(v, pairs)]));
  return value;
}

async function bench(provider) {
  const { startModelServer } = await dist('model/server.js');
  const { AgentSessions } = await dist('sessions/agent-sessions.js');
  const server = await startModelServer({});
  const scratch = await fs.mkdtemp(path.join(os.tmpdir(), `cal-bench-${provider}-`));
  const states = { cal: path.join(scratch, 'state'), bare: path.join(scratch, 'state-bare') };
  try {
    const dirs = { live: path.join(scratch, 'live'), structured: path.join(scratch, 'structured'), bare: path.join(scratch, 'bare') };
    for (const d of Object.values(dirs)) await fs.mkdir(d);
    const base = { ...withoutCaBundle(process.env), PATH: `${binDir}:${process.env.PATH}`, DISABLE_AUTOUPDATER: '1' };
    const env = await AgentSessions.scriptedModelEnv(provider, path.join(scratch, 'home'), server.url, base);
    const calIn = (state) => (args) => timed(process.execPath, [path.join(root, 'bin', 'cal.cjs'), '--state-dir', state, ...args], { env });
    const calRun = calIn(states.cal);
    const first = 'Remember the codeword BENCH.';
    const started = (run) => /handle: (\S+)/.exec(must(run, `cal start (${provider})`).stderr)[1];
    const live = started(await calRun(['start', '--provider', provider, '--cwd', dirs.live, first]));
    const structured = started(await calRun(['start', '--provider', provider, '--transport', 'structured', '--cwd', dirs.structured, first]));
    // The bare side's own session, begun by cal (its start is not measured), resumed by the CLI.
    const bareHandle = started(await calIn(states.bare)(['start', '--provider', provider, '--transport', 'structured', '--cwd', dirs.bare, first]));
    const ours = await view(calRun, structured, states.cal);
    const theirs = await view(calIn(states.bare), bareHandle, states.bare);
    let command = null;
    let commandMessage = null;

    const row = () => ({ cal: [], phases: [], storeReads: [], unusedEarly: [] });
    const rows = { tmux: row(), structured: row(), bare: [] };
    const trace = path.join(scratch, 'trace');
    const calTurn = async (kind, handle, message) => {
      const run = await calTimed(['--state-dir', states.cal, 'continue', handle, message], { env, trace });
      must(run, `cal continue (${provider} ${kind})`);
      if (!recalled(run.stdout)) throw new Error(`cal continue (${provider} ${kind}) answered ${JSON.stringify(run.stdout.slice(0, 200))}`);
      rows[kind].cal.push(run.ms);
      rows[kind].phases.push({ start: run.startedAt, ...run.marks, exit: run.exitedAt });
      // Reads of a store the CLI keeps outside a file cal can tail (OpenCode's SQLite: each one
      // starts the binary), counted per turn.
      const trace_ = await fs.readFile(trace, 'utf8').catch(() => '');
      rows[kind].storeReads.push(trace_.split('\n').filter((l) => l.split(' ')[2] === 'store-read').length);
      // A CLI cal's entry started and the turn did not use (a second spawn): why, from the trace.
      for (const [name, why] of detailLines(trace_)) if (name === 'early-launch-unused') rows[kind].unusedEarly.push(why);
      if (kind === 'structured') [command, commandMessage] = [await traceDetails(trace), message];
    };
    const bareTurn = async (message) => {
      if (!command) return;
      const spawned = command['structured-command'];
      const pairs = [
        [ours.transcript, theirs.transcript],
        [ours.native, theirs.native],
        [ours.home, theirs.home],
        [ours.cwd, theirs.cwd],
        [commandMessage, message],
      ];
      const argv = swap(spawned.argv, pairs);
      const cliEnv = { ...Object.fromEntries(Object.entries(env).filter(([k]) => !spawned.unset.includes(k))), ...swap(spawned.env, pairs) };
      const input = command['structured-stdin'] === undefined ? undefined : swap(command['structured-stdin'], pairs);
      const run = await timed(argv[0], argv.slice(1), { env: cliEnv, cwd: theirs.cwd ?? dirs.bare, input: input || undefined });
      must(run, `bare ${provider} resume`);
      if (!recalled(run.stdout)) throw new Error(`bare ${provider} resume did not recall: ${run.stdout.slice(-300)}`);
      rows.bare.push(run.ms);
    };
    // One structured turn first: it tells the bare side the command to replay.
    await calTurn('structured', structured, 'What was the codeword? (warm-up)');
    rows.structured = row();
    const quiet = await untilQuiet();
    for (let i = 0; i < RUNS; i++) {
      const message = `What was the codeword? (${i})`;
      const order = [() => bareTurn(message), () => calTurn('tmux', live, message), () => calTurn('structured', structured, message)];
      for (let k = 0; k < order.length; k++) await order[(i + k) % order.length]();
    }
    const version = JSON.parse(must(await calRun(['inspect', live, '--json']), 'cal inspect').stdout).provider.cli?.version ?? '?';
    return { provider, version, quiet, rows };
  } finally {
    for (const state of Object.values(states)) {
      const { tmuxSocketFor } = await dist('engine/tmux-socket.js');
      await timed('tmux', ['-S', await tmuxSocketFor(path.join(state, 'tmux')), 'kill-server']);
    }
    await server.close();
    for (let i = 0; i < 10; i++) {
      if (await fs.rm(scratch, { recursive: true, force: true }).then(() => true, () => false)) break;
      await new Promise((r) => setTimeout(r, 300));
    }
  }
}

/** Median time between two marks of cal's turns (null when a turn lacks one). */
function phase(phases, from, to) {
  const xs = phases.filter((p) => p[from] !== undefined && p[to] !== undefined).map((p) => p[to] - p[from]);
  return xs.length ? median(xs) : null;
}

/**
 * The ratio a program would get that did nothing but start Node (`node -e 0` on this machine) and
 * wait for the CLI's own part of the turn: the bare run (structured), or the CLI's turn in its
 * pane from the paste to its record (tmux). A target under it is out of reach of any Node
 * program on this machine, cal included; printed beside each row, so a FAIL says which it is.
 */
export function floorRatio(kind, phases, bareMs, nodeMs) {
  const cliPart = kind === 'tmux' ? phase(phases, 'paste-sent', 'end-read') : bareMs;
  return cliPart === null || !Number.isFinite(nodeMs) ? null : (nodeMs + cliPart) / bareMs;
}

/** cal's phases of one row, as words: where its own time goes. */
export function phaseText(kind, phases, storeReads = [], unusedEarly = []) {
  const reads = storeReads.some((n) => n > 0) ? `; store reads a turn ${median(storeReads)}` : '';
  const unused = unusedEarly.length ? `; the CLI cal's entry started went unused ${unusedEarly.length} times (${[...new Set(unusedEarly)].join('; ')})` : '';
  return phaseWords(kind, phases) + reads + unused;
}

function phaseWords(kind, phases) {
  const ms = (x) => (x === null ? '-' : `${x.toFixed(0)} ms`);
  const common = `to cal's entry ${ms(phase(phases, 'start', 'main'))}, module graph ${ms(phase(phases, 'main', 'command-loaded'))}, turn recorded and locked ${ms(phase(phases, 'command-loaded', 'locked'))}`;
  if (kind === 'tmux') {
    return `${common}, draft check ${ms(phase(phases, 'handle-loaded', 'draft-checked'))}, paste and submit ${ms(phase(phases, 'sending-recorded', 'paste-sent'))}, the CLI's turn to its record read ${ms(phase(phases, 'paste-sent', 'end-read'))}, record read to exit ${ms(phase(phases, 'end-read', 'exit'))}${exitWords(phases, 'end-read')}`;
  }
  return `to the CLI's spawn ${ms(phase(phases, 'start', 'structured-spawned'))} (${common}), the CLI ${ms(phase(phases, 'structured-spawned', 'structured-exited'))}, its end to cal's exit ${ms(phase(phases, 'structured-exited', 'exit'))}${exitWords(phases, 'structured-exited')}`;
}

/** The part after the CLI's end: cal's command finishing, then its process ending (`command-done`). */
function exitWords(phases, from) {
  const work = phase(phases, from, 'command-done');
  const exit = phase(phases, 'command-done', 'exit');
  return work === null || exit === null ? '' : ` (the command ${work.toFixed(0)} ms, the process's exit ${exit.toFixed(0)} ms)`;
}

export async function benchAll(providers) {
  const results = [];
  for (const provider of providers) {
    try {
      results.push(await bench(provider));
    } catch (err) {
      results.push({ provider, error: err instanceof Error ? err.message : String(err) });
    }
  }
  return results;
}

if (import.meta.url === pathToFileURL(path.resolve(process.argv[1] ?? '')).href) {
  const args = process.argv.slice(2);
  const jsonAt = args.indexOf('--json');
  const out = jsonAt === -1 ? null : args.splice(jsonAt, 2)[1];
  const results = await benchAll(args.length ? args : PROVIDERS);
  let failed = 0;
  for (const r of results) {
    if (r.error) {
      failed++;
      console.log(`${r.provider}: FAIL (${r.error})`);
      continue;
    }
    const bare = median(r.rows.bare);
    for (const kind of ['tmux', 'structured']) {
      const ratio = median(r.rows[kind].cal) / bare;
      const target = TARGETS[`${r.provider} ${kind}`];
      const verdict = target === undefined ? '' : ratio <= target ? ` PASS (≤ ${target}x)` : ` FAIL (≤ ${target}x)`;
      if (verdict.startsWith(' FAIL')) failed++;
      console.log(`${r.provider} ${r.version} ${kind}: cal ${median(r.rows[kind].cal).toFixed(0)} ms vs bare ${bare.toFixed(0)} ms, ${ratio.toFixed(2)}x${verdict}`);
      console.log(`  ${phaseText(kind, r.rows[kind].phases, r.rows[kind].storeReads, r.rows[kind].unusedEarly)}`);
    }
  }
  if (out) await fs.writeFile(out, JSON.stringify(results));
  process.exitCode = failed ? 1 : 0;
}
