#!/usr/bin/env node
// Benchmark (not a test): `cal continue` on the structured transport against the bare CLI's own
// resume, side by side in one run, for each CLI with a structured transport:
//   claude-code: claude -p --resume <id> --output-format stream-json --verbose
//   pi:          pi --session <file> -p <message>
//   codex:       codex exec resume --json <id> <message>
//   gemini:      gemini --resume <id> --output-format stream-json --prompt=<message>
// Each provider gets the scripted model, a throwaway home, one session started by cal (resumed
// with `cal continue <handle>`) and one started by the bare CLI itself (resumed by it). Turns
// come in pairs, bare then cal and cal then bare in turn, each once the other's CLI has exited,
// so both see the same machine load and the same history length. Prints the medians, their
// ratio and PASS/MISS against the target (cal ≤ 1.15× bare).
//
// Codex's bare side is the `codex` command as npm installs it (a node wrapper that execs the
// native binary: what a user types); cal runs the native binary itself, so the native binary's own
// time is measured too and printed beside it.
//
// NODE_EXTRA_CA_CERTS is removed from every process's environment: a machine that sets it (this
// sandbox does) makes every node process read the bundle at start (≈ 80 ms here), which cal and a
// node CLI pay and a native one does not; the scripted model is plain http and needs no CA.
//
//   npm run build && node bench/structured.mjs [claude-code|pi|codex|gemini …]   (BENCH_TURNS=9 by default)
// Run it under the shared lock for the real CLIs: flock /tmp/cal-realcli.lock node bench/structured.mjs
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { untilQuiet } from './lib.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cal = path.join(root, 'bin', 'cal.cjs');
const dist = (p) => import(path.join(root, 'dist', p));
const TARGET = 1.15;
const TURNS = Number(process.env.BENCH_TURNS ?? 9);
const withoutCaBundle = (env) => Object.fromEntries(Object.entries(env).filter(([k]) => k !== 'NODE_EXTRA_CA_CERTS'));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function run(argv, { env, cwd, input }) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(argv[0], argv.slice(1), { env, cwd, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, out, err, ms: performance.now() - started }));
    if (input !== undefined) child.stdin.end(input);
  });
}

/** Whether a bare CLI's stdout answers with the codeword (Gemini streams its answer in pieces). */
function recalled(stdout) {
  const pieces = stdout.split('\n').flatMap((line) => {
    try {
      const e = JSON.parse(line);
      return e.type === 'message' && e.role === 'assistant' && typeof e.content === 'string' ? [e.content] : [];
    } catch {
      return [];
    }
  });
  return stdout.includes('The codeword was BENCH.') || pieces.join('').includes('The codeword was BENCH.');
}

/**
 * Waits (up to 2 s) until no process has `dir` as its working directory: the CLI a run started
 * (and anything it left behind) is gone before the next measurement begins.
 */
async function untilNoProcessIn(dir) {
  const real = await fs.realpath(dir);
  const deadline = performance.now() + 2000;
  while (performance.now() < deadline) {
    const pids = (await fs.readdir('/proc')).filter((name) => /^\d+$/.test(name));
    const cwds = await Promise.all(pids.map((pid) => fs.readlink(`/proc/${pid}/cwd`).catch(() => null)));
    if (!cwds.includes(real)) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}

function must(res, what) {
  if (res.code !== 0) throw new Error(`${what} exited ${res.code}: ${(res.err || res.out).slice(-400)}`);
  return res;
}

/** How the bare CLI starts a session of its own and resumes it: the same binary, flags and environment cal uses. */
async function bareCli(provider, env, work, realPath) {
  if (provider === 'claude-code') {
    const { launchEnv } = await dist('adapters/claude-code/launch.js');
    const config = { cwd: work, model: null, systemPrompt: null, mcpConfigPath: null, toolPolicy: 'default' };
    const cliEnv = launchEnv(env, config);
    const id = randomUUID();
    const flags = ['-p', '--output-format', 'stream-json', '--verbose'];
    return {
      start: (m) => run([realPath, ...flags, '--session-id', id, '--', m], { env: cliEnv, cwd: work }),
      resume: (m) => run([realPath, ...flags, '--resume', id, '--', m], { env: cliEnv, cwd: work }),
    };
  }
  if (provider === 'gemini') {
    // The two variables cal's Gemini launches carry (no relaunch of itself into a second node
    // process, the folder trusted), on the user's own Gemini home, where a bare run would be.
    const cliEnv = { ...env, GEMINI_CLI_TRUST_WORKSPACE: 'true', GEMINI_CLI_NO_RELAUNCH: 'true' };
    const id = randomUUID();
    const flags = ['--output-format', 'stream-json'];
    return {
      start: (m) => run([realPath, '--session-id', id, ...flags, `--prompt=${m}`], { env: cliEnv, cwd: work }),
      resume: (m) => run([realPath, '--resume', id, ...flags, `--prompt=${m}`], { env: cliEnv, cwd: work }),
    };
  }
  if (provider === 'pi') {
    const file = path.join(work, '..', `bare-${randomUUID()}.jsonl`);
    const turn = (m) => run([realPath, '--session', file, '-p', m], { env, cwd: work });
    return { start: turn, resume: turn };
  }
  const { codexEnv } = await dist('adapters/codex/binary.js');
  const { commonOverrides } = await dist('adapters/codex/config.js');
  const config = { cwd: work, model: null, systemPrompt: null, mcpConfigPath: null, toolPolicy: 'default' };
  const cliEnv = codexEnv(env, realPath);
  const common = ['--json', '--skip-git-repo-check', ...commonOverrides(config)];
  let thread = null;
  return {
    async start(m) {
      const res = await run([realPath, 'exec', ...common, '--', m], { env: cliEnv, cwd: work });
      thread = /"thread_id":"([^"]+)"/.exec(res.out)?.[1] ?? null;
      return res;
    },
    resume: (m) => run([realPath, 'exec', 'resume', ...common, '--', thread, m], { env: cliEnv, cwd: work }),
  };
}

async function bench(provider) {
  const { startModelServer } = await dist('model/server.js');
  const { AgentSessions } = await dist('sessions/agent-sessions.js');
  const { loadCliAdapter } = await dist('adapters/registry.js');
  const server = await startModelServer({});
  const scratch = await fs.mkdtemp(path.join(os.tmpdir(), `cal-bench-structured-${provider}-`));
  try {
    const state = path.join(scratch, 'state');
    const calWork = path.join(scratch, 'cal-work');
    const bareWork = path.join(scratch, 'bare-work');
    await fs.mkdir(calWork);
    await fs.mkdir(bareWork);
    const base = { ...withoutCaBundle(process.env), PATH: `${path.join(root, 'node_modules', '.bin')}:${process.env.PATH}` };
    const env = await AgentSessions.scriptedModelEnv(provider, scratch, server.url, base);
    const pinned = await (await loadCliAdapter(provider)).resolveCli(undefined, env);
    const calRun = (args, input) => run([process.execPath, cal, '--state-dir', state, ...args], { env, cwd: calWork, input });

    const started = must(await calRun(['start', '--provider', provider, '--transport', 'structured', '--cwd', calWork, 'Remember the codeword BENCH.']), 'cal start');
    const handle = /handle: (\S+)/.exec(started.err)[1];
    // Codex: `codex` as npm installs it (the wrapper) for the ratio, its native binary beside it.
    const bare = await bareCli(provider, env, bareWork, provider === 'codex' ? pinned.path : pinned.realPath);
    must(await bare.start('Remember the codeword BENCH.'), 'bare start');
    const native = provider === 'codex' ? await bareCli(provider, env, bareWork, pinned.realPath) : null;
    if (native) must(await native.start('Remember the codeword BENCH.'), 'native start');

    const calMs = [];
    const bareMs = [];
    const beforeMs = [];
    const cliMs = [];
    const afterMs = [];
    const heldMs = [];
    const nativeMs = [];
    const markMs = {};
    const bareTurn = async (i, message) => {
      const b = must(await bare.resume(message), `bare resume ${i}`);
      if (!recalled(b.out)) throw new Error(`bare resume ${i} did not recall: ${b.out.slice(-300)}`);
      bareMs.push(b.ms);
      await untilNoProcessIn(bareWork);
      if (native) {
        nativeMs.push(must(await native.resume(message), `native resume ${i}`).ms);
        await untilNoProcessIn(bareWork);
      }
    };
    const calOffMs = [];
    // BENCH_EARLY_AB=1: each cal turn also runs without its entry's early start (CAL_EARLY_LAUNCH=0),
    // the two in alternating order, for that one change measured side by side (cal's session then
    // grows twice as fast as the bare one, against cal a little).
    const calTurn = async (i, message) => {
      if (process.env.BENCH_EARLY_AB && i % 2 === 0) await calOffTurn(i, message);
      const trace = path.join(scratch, 'trace');
      await fs.rm(trace, { force: true });
      const started = performance.timeOrigin + performance.now();
      // BENCH_CPU_PROF=<dir>: a V8 CPU profile of every cal continue (slower: for finding where the time goes).
      const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_CPU_PROF] : [];
      const c = must(await run([process.execPath, ...prof, cal, '--state-dir', state, 'continue', handle, message], { env: { ...env, CAL_TRACE_TIMING: trace }, cwd: calWork }), `cal continue ${i}`);
      if (c.out.trim() !== 'The codeword was BENCH.') throw new Error(`cal continue ${i} answered ${c.out.trim()}`);
      calMs.push(c.ms);
      // cal returns on Claude's result while its claude -p goes on for 20-50 ms: the next
      // measurement starts once it is gone, so neither side's run overlaps the other's CLI.
      await untilNoProcessIn(calWork);
      // cal's own share: from its spawn to the CLI's, and from the CLI's end (its exit, or for
      // Claude its result event) to its own exit.
      const marks = Object.fromEntries((await fs.readFile(trace, 'utf8').catch(() => '')).split('\n').filter(Boolean).map((l) => [l.split(' ')[2], Number(l.split(' ')[0])]));
      for (const [name, at] of Object.entries(marks)) (markMs[name] ??= []).push(at - started);
      if (marks['structured-spawned'] && marks['structured-exited']) {
        beforeMs.push(marks['structured-spawned'] - started);
        cliMs.push(marks['structured-exited'] - marks['structured-spawned']);
        afterMs.push(started + c.ms - marks['structured-exited']);
        // A CLI started ahead of its message (Claude): how long it held before cal sent it.
        if (marks['structured-sent']) heldMs.push(marks['structured-sent'] - marks['structured-spawned']);
      }
      if (process.env.BENCH_EARLY_AB && i % 2 === 1) await calOffTurn(i, message);
    };
    const calOffTurn = async (i, message) => {
      const c = must(await run([process.execPath, cal, '--state-dir', state, 'continue', handle, `${message} (no early start)`], { env: { ...env, CAL_EARLY_LAUNCH: '0' }, cwd: calWork }), `cal continue ${i} without the early start`);
      if (c.out.trim() !== 'The codeword was BENCH.') throw new Error(`cal continue ${i} without the early start answered ${c.out.trim()}`);
      calOffMs.push(c.ms);
      await untilNoProcessIn(calWork);
    };
    // The measured turns begin on a quiet machine, as the targets are stated: the starts above,
    // or whatever ran before this script (the panes of `npm run bench`), may still be busy.
    const quiet = await untilQuiet();
    // Pairs in alternating order (bare then cal, cal then bare, …): whichever side runs second
    // never always follows the same one, so what one side leaves behind (a CLI still exiting, the
    // kernel freeing its memory) weighs on both alike.
    for (let i = 0; i < TURNS; i++) {
      const message = `What was the codeword? (${i})`;
      if (i % 2 === 0) {
        await bareTurn(i, message);
        await calTurn(i, message);
      } else {
        await calTurn(i, message);
        await bareTurn(i, message);
      }
    }
    return { provider, version: pinned.version, quiet, calMs, bareMs, nativeMs, beforeMs, cliMs, afterMs, heldMs, markMs, calOffMs };
  } finally {
    await server.close();
    // cal returns on Claude's result while its claude -p still writes its last files (it exits
    // 20-50 ms later): the removal is tried again for a while.
    for (let i = 0; i < 10; i++) {
      const removed = await fs.rm(scratch, { recursive: true, force: true }).then(() => true, () => false);
      if (removed) break;
      await new Promise((r) => setTimeout(r, 300));
    }
  }
}

const providers = process.argv.slice(2).length ? process.argv.slice(2) : ['claude-code', 'pi', 'codex', 'gemini'];
const fmt = (xs) => `median ${median(xs).toFixed(0)} ms (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)})`;
let missed = 0;
for (const provider of providers) {
  const r = await bench(provider);
  const ratio = median(r.calMs) / median(r.bareMs);
  const verdict = ratio <= TARGET ? 'PASS' : 'MISS';
  if (verdict === 'MISS') missed++;
  console.log(`${provider} ${r.version}, ${TURNS} resumed turns each, in pairs of alternating order:`);
  console.log(`  begun after ${(r.quiet.waitedMs / 1000).toFixed(1)} s ${r.quiet.busy === null ? 'of waiting (no /proc/stat)' : `waiting for quiet (CPU ${(100 * r.quiet.busy).toFixed(0)}% busy)`}`);
  console.log(`  bare CLI resume            ${fmt(r.bareMs)}`);
  if (r.nativeMs.length) console.log(`  (its native binary alone  ${fmt(r.nativeMs)}, ratio ${(median(r.calMs) / median(r.nativeMs)).toFixed(2)}x)`);
  console.log(`  cal continue (structured)  ${fmt(r.calMs)}`);
  if (r.cliMs.length) {
    console.log(`    cal before the CLI's spawn  median ${median(r.beforeMs).toFixed(0)} ms`);
    if (r.heldMs.length) console.log(`    its spawn to cal's send     median ${median(r.heldMs).toFixed(0)} ms (started ahead, while cal records the turn)`);
    console.log(`    the CLI under cal           median ${median(r.cliMs).toFixed(0)} ms`);
    console.log(`    cal after the CLI's end     median ${median(r.afterMs).toFixed(0)} ms (its exit; Claude: its result)`);
  }
  // BENCH_MARKS=1: every timing mark of cal's turns, as the median time from cal's spawn.
  if (process.env.BENCH_MARKS) {
    for (const [name, at] of Object.entries(r.markMs).sort((a, b) => median(a[1]) - median(b[1]))) console.log(`    mark ${name.padEnd(20)} ${median(at).toFixed(1)} ms after cal's spawn`);
  }
  if (r.calOffMs.length) console.log(`  (cal without the early start ${fmt(r.calOffMs)}, ratio ${(median(r.calOffMs) / median(r.bareMs)).toFixed(2)}x)`);
  console.log(`  ratio ${ratio.toFixed(2)}x  ${verdict} (target ≤ ${TARGET}x)`);
}
process.exitCode = missed ? 1 : 0;
