#!/usr/bin/env node
// Many live sessions under the default reaping policy (issue 42, docs/reaping.md): N sessions
// (default 64) are started one after another and then continued in turn, each asked for its own
// codeword, on the real pinned CLI against cal's scripted model. While it runs, the resident
// memory of cal and the CLIs together is sampled every 250 ms: every process of cal's tmux server
// (the panes' CLIs and all they started) plus the cal process of the moment and its children.
// Target: the peak stays within 2 GB, and every session recalls its codeword.
//
//     npm run build
//     flock /tmp/cal-realcli.lock node bench/live-sessions.mjs              # 64 Codex sessions
//     BENCH_SESSIONS=16 BENCH_PROVIDER=claude-code node bench/live-sessions.mjs
//
// Writes docs/performance-live-sessions.md (BENCH_OUT to write elsewhere). RSS is summed per
// process (pages shared between processes counted in each), so the figure is an upper bound.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Report, binDir, calBin, fmt, median, root, timed, versionOf } from './lib.mjs';

const N = Number(process.env.BENCH_SESSIONS ?? 64);
const PROVIDER = process.env.BENCH_PROVIDER ?? 'codex';
const LIMIT_BYTES = 2 * 1024 ** 3;
const BIN = { codex: 'codex', 'claude-code': 'claude', gemini: 'gemini', pi: 'pi' }[PROVIDER];
if (!BIN) throw new Error(`BENCH_PROVIDER: one of codex, claude-code, gemini, pi, not ${PROVIDER}`);

const { startModelServer } = await import(path.join(root, 'dist', 'model', 'server.js'));
const { AgentSessions } = await import(path.join(root, 'dist', 'sessions', 'agent-sessions.js'));
const { tmuxSocketFor } = await import(path.join(root, 'dist', 'engine', 'tmux-socket.js'));

const server = await startModelServer({});
const scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'cal-bench-live-'));
const base = { PATH: `${binDir}:${process.env.PATH}`, LANG: 'C.UTF-8', TERM: 'xterm-256color', DISABLE_AUTOUPDATER: '1' };
const state = path.join(scratch, 'state');
const work = path.join(scratch, 'work');
await fs.mkdir(work);
const env = await AgentSessions.scriptedModelEnv(PROVIDER, path.join(scratch, 'home'), server.url, base);
const socket = await tmuxSocketFor(path.join(state, 'tmux'));

/** Every process: pid → { ppid, rss bytes, argv }. */
function processTable() {
  const table = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const rssPages = Number(fields[21]);
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      table.set(Number(entry), { ppid: Number(fields[1]), rss: rssPages * 4096, argv });
    } catch {
      // Gone meanwhile.
    }
  }
  return table;
}

/** RSS of cal's tmux server and everything under it, and of the running cal and everything under it. */
function residentBytes(calPid) {
  const table = processTable();
  const roots = new Set();
  for (const [pid, p] of table) if (p.argv[0]?.endsWith('tmux') && p.argv.includes(socket)) roots.add(pid);
  if (calPid) roots.add(calPid);
  const children = new Map();
  for (const [pid, p] of table) children.set(p.ppid, [...(children.get(p.ppid) ?? []), pid]);
  let total = 0;
  const seen = new Set();
  const stack = [...roots];
  while (stack.length) {
    const pid = stack.pop();
    if (seen.has(pid) || !table.has(pid)) continue;
    seen.add(pid);
    total += table.get(pid).rss;
    stack.push(...(children.get(pid) ?? []));
  }
  return total;
}

let calPid = null;
let peak = 0;
const sampler = setInterval(() => {
  peak = Math.max(peak, residentBytes(calPid));
}, 250);

function livePanes() {
  const r = spawnSync('tmux', ['-S', socket, 'list-panes', '-a', '-F', '#{pane_dead}'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.split('\n').filter((l) => l === '0').length : 0;
}

async function cal(args) {
  const run = timed(process.execPath, [calBin, '--state-dir', state, ...args], { env });
  // The pid is known once spawned: timed() resolves at the exit, so it is read from /proc meanwhile.
  const poll = setInterval(() => {
    for (const [pid, p] of processTable()) if (p.argv.includes(calBin) && p.argv.includes(state)) calPid = pid;
  }, 100);
  const done = await run;
  clearInterval(poll);
  calPid = null;
  return done;
}

const words = Array.from({ length: N }, (_, i) => `WORD${i}X`);
const handles = [];
const startMs = [];
const continueMs = [];
let recalled = 0;
let maxLive = 0;
const failures = [];
console.log(`live sessions: ${N} ${PROVIDER} ${versionOf(BIN, env)} sessions under the default policy, ${os.cpus().length} cores`);
try {
  for (const [i, word] of words.entries()) {
    const run = await cal(['start', '--provider', PROVIDER, '--cwd', work, `Remember the codeword ${word}.`]);
    const handle = /handle: (\S+)/.exec(run.stderr)?.[1];
    if (run.code !== 0 || !handle) failures.push(`start ${i}: exit ${run.code} ${run.stderr.trim().slice(0, 200)}`);
    handles.push(handle);
    startMs.push(run.ms);
    maxLive = Math.max(maxLive, livePanes());
    process.stdout.write(`start ${i + 1}/${N} ${fmt(run.ms)} · ${livePanes()} live panes · peak ${(peak / 1024 ** 2).toFixed(0)} MB\n`);
  }
  for (const [i, handle] of handles.entries()) {
    if (!handle) continue;
    const run = await cal(['continue', handle, 'What was the codeword?']);
    continueMs.push(run.ms);
    if (run.code === 0 && run.stdout.includes(`The codeword was ${words[i]}.`)) recalled++;
    else failures.push(`continue ${i}: exit ${run.code} ${(run.stdout + run.stderr).trim().slice(0, 200)}`);
    maxLive = Math.max(maxLive, livePanes());
    process.stdout.write(`continue ${i + 1}/${N} ${fmt(run.ms)} · ${livePanes()} live panes · peak ${(peak / 1024 ** 2).toFixed(0)} MB\n`);
  }
} finally {
  clearInterval(sampler);
  spawnSync('tmux', ['-S', socket, 'kill-server']);
  await server.close?.();
}

const report = new Report();
const mb = (bytes) => `${(bytes / 1024 ** 2).toFixed(0)} MB`;
report.rows.push({ target: `${N} ${PROVIDER} sessions started and continued in turn: peak resident memory of cal and the CLIs`, measured: mb(peak), limit: `≤ ${mb(LIMIT_BYTES)}`, ratio: peak / LIMIT_BYTES, pass: peak <= LIMIT_BYTES, detail: '' });
report.rows.push({ target: `every session recalls its codeword`, measured: `${recalled} of ${N}`, limit: `${N} of ${N}`, ratio: recalled / N, ratioText: '-', pass: recalled === N, detail: '' });
report.notes.push(
  `${PROVIDER} ${versionOf(BIN, env)}; the default policy (at most 6 live panes, idle 900 s); at most ${maxLive} live panes seen after a call`,
  `start: median ${fmt(median(startMs))}; continue (most resume a reaped pane natively): median ${fmt(median(continueMs))}`,
  'resident memory summed per process every 250 ms (shared pages counted in each process: an upper bound)',
  ...failures.slice(0, 5),
);
const out = process.env.BENCH_OUT ?? path.join(root, 'docs', 'performance-live-sessions.md');
const cpus = os.cpus();
const machine = `${cpus.length} cores (${cpus[0]?.model ?? '?'}), ${os.platform()} ${os.release()}, node ${process.version}`;
const markdown = report
  .markdown({ date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC', machine, nodeStartupMs: NaN, command: `BENCH_SESSIONS=${N} BENCH_PROVIDER=${PROVIDER} node bench/live-sessions.mjs` })
  .replace('# Performance: the latest run', '# Performance: many live sessions')
  .replace('(bench/run.mjs)', '(bench/live-sessions.mjs)');
await fs.writeFile(out, markdown);
console.log(markdown);
await fs.rm(scratch, { recursive: true, force: true });
process.exit(peak <= LIMIT_BYTES && recalled === N ? 0 : 1);
