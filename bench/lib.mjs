// Helpers for bench/run.mjs: timed child processes, cal's timing trace, transcript watching,
// statistics and the report table. Times are epoch milliseconds with sub-millisecond precision
// (performance.timeOrigin + performance.now()), the clock cal's CAL_TRACE_TIMING marks use too.
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, fstatSync, openSync, readFileSync, readSync, watch } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const calBin = path.join(root, 'bin', 'cal.cjs');
export const binDir = path.join(root, 'node_modules', '.bin');
export const now = () => performance.timeOrigin + performance.now();
/** The record Claude Code writes into its transcript when a turn ends. */
export const TURN_END = '"subtype":"turn_duration"';
/** Whether a run's answer is the scripted model's recall of `word`. */
export const codeword = (run, word) => run.stdout.includes(`The codeword was ${word}.`);
/**
 * An environment without NODE_EXTRA_CA_CERTS: a machine that sets it makes every node process
 * read a CA bundle at start, which cal and node CLIs pay and native ones do not.
 */
export const withoutCaBundle = (env) => Object.fromEntries(Object.entries(env).filter(([k]) => k !== 'NODE_EXTRA_CA_CERTS'));

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/** Runs a command to its end; startedAt is taken right before the spawn, exitedAt at its exit. */
export function timed(cmd, args, { env, cwd, input, timeoutMs = 300_000 } = {}) {
  return new Promise((resolve) => {
    const startedAt = now();
    // In a folder, with PWD naming it, as a shell's `cd` leaves it: OpenCode takes its project
    // from PWD, not from the process's folder, and hung in the folder bench ran from. A run that
    // still hangs is killed, and fails its row, instead of holding the bench for ever.
    const child = spawn(cmd, args, { env: cwd && env ? { ...env, PWD: cwd } : env, cwd, timeout: timeoutMs, killSignal: 'SIGKILL', stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    if (input !== undefined) child.stdin.end(input);
    child.on('close', (code) => resolve({ code, stdout, stderr, startedAt, exitedAt: now(), ms: now() - startedAt, pid: child.pid }));
  });
}

/** Runs cal (the built bin) with a timing trace of its own; returns the run and its marks by name. */
export async function calTimed(args, { env, trace, input }) {
  await fs.rm(trace, { force: true });
  const run = await timed(process.execPath, [calBin, ...args], { env: { ...env, CAL_TRACE_TIMING: trace }, input });
  return { ...run, marks: await readMarks(trace) };
}

/** The marks of a timing trace (CAL_TRACE_TIMING) by name, each at its first time; none without the file. */
export async function readMarks(trace) {
  const marks = {};
  const text = await fs.readFile(trace, 'utf8').catch(() => '');
  for (const line of text.split('\n')) {
    const [t, , name] = line.split(' ');
    if (name && marks[name] === undefined) marks[name] = Number(t);
  }
  return marks;
}

/**
 * Watches a JSONL transcript for a line containing `needle` written after its current end.
 * The time is taken when the change notification arrives, before the new bytes are read.
 * seenAt() gives that time (or null), wait() resolves with it, stop() ends the watch.
 */
export function watchFor(file, needle) {
  const fd = openSync(file, 'r');
  let offset = fstatSync(fd).size;
  let seenAt = null;
  let text = '';
  let wake = () => undefined;
  const check = () => {
    const at = now();
    if (seenAt !== null) return;
    const size = fstatSync(fd).size;
    if (size <= offset) return;
    const buf = Buffer.alloc(size - offset);
    readSync(fd, buf, 0, buf.length, offset);
    offset = size;
    text += buf.toString('utf8');
    if (text.includes(needle)) {
      seenAt = at;
      wake();
    }
  };
  const watcher = watch(file, check);
  // inotify can coalesce or miss: a slow poll as well.
  const poll = setInterval(check, 50);
  return {
    seenAt: () => {
      check();
      return seenAt;
    },
    wait: (timeoutMs = 120_000) =>
      new Promise((resolve, reject) => {
        if (seenAt !== null) return resolve(seenAt);
        const timer = setTimeout(() => reject(new Error(`${needle} did not appear in ${file} within ${timeoutMs} ms`)), timeoutMs);
        wake = () => {
          clearTimeout(timer);
          resolve(seenAt);
        };
      }),
    stop: () => {
      clearInterval(poll);
      watcher.close();
      closeSync(fd);
    },
  };
}

export async function fileSize(file) {
  try {
    return (await fs.stat(file)).size;
  } catch {
    return 0;
  }
}

export function versionOf(bin, env) {
  const r = spawnSync(path.join(binDir, bin), ['--version'], { env, encoding: 'utf8' });
  return /(\d+\.\d+\.\d+)/.exec(`${r.stdout}${r.stderr}`)?.[1] ?? '?';
}

export function must(run, what) {
  if (run.code !== 0) throw new Error(`${what} exited ${run.code}: ${(run.stderr || run.stdout).trim().slice(0, 500)}`);
  return run;
}

/** The machine's CPU time so far, idle (with I/O wait) and in all, in clock ticks, from /proc/stat. */
function cpuTimes() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return { idle: fields[3] + fields[4], total: fields.reduce((a, b) => a + b, 0) };
}

/**
 * Waits until the machine is quiet: under `busyBelow` of its CPU busy over each of two 0.5 s
 * windows in a row, or `maxMs` passed. Returns how long it waited and the last window's share
 * (null without /proc/stat, where it waits a fixed 3 s).
 */
export async function untilQuiet({ busyBelow = 0.15, maxMs = 20_000 } = {}) {
  const started = now();
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  let before;
  try {
    before = cpuTimes();
  } catch {
    await sleep(3000);
    return { waitedMs: now() - started, busy: null };
  }
  let quietWindows = 0;
  let busy = 1;
  while (quietWindows < 2 && now() - started < maxMs) {
    await sleep(500);
    const after = cpuTimes();
    busy = after.total === before.total ? 0 : 1 - (after.idle - before.idle) / (after.total - before.total);
    before = after;
    quietWindows = busy < busyBelow ? quietWindows + 1 : 0;
  }
  return { waitedMs: now() - started, busy };
}

const fmt = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`);
export { fmt };

/** The report: one row per target, measured value, limit, ratio to the limit, PASS/FAIL. */
export class Report {
  rows = [];
  notes = [];

  /** A target "measured ≤ limit" in milliseconds. */
  absolute(target, measuredMs, limitMs, detail = '') {
    this.rows.push({ target, measured: fmt(measuredMs), limit: `≤ ${fmt(limitMs)}`, ratio: measuredMs / limitMs, pass: measuredMs <= limitMs, detail });
  }

  /** A target "measured ≤ factor × baseline". */
  relative(target, measuredMs, baselineMs, factor, baselineName, detail = '') {
    const ratio = measuredMs / baselineMs;
    this.rows.push({ target, measured: `${fmt(measuredMs)} vs ${fmt(baselineMs)} ${baselineName}`, limit: `≤ ${factor.toFixed(2)}x`, ratio, ratioText: `${ratio.toFixed(2)}x`, pass: ratio <= factor, detail });
  }

  /** A target "measured ≤ baseline + slack". */
  slack(target, measuredMs, baselineMs, slackMs, baselineName, detail = '') {
    const limit = baselineMs + slackMs;
    this.rows.push({ target, measured: `${fmt(measuredMs)} vs ${fmt(baselineMs)} ${baselineName}`, limit: `≤ ${baselineName} + ${fmt(slackMs)}`, ratio: measuredMs / limit, pass: measuredMs <= limit, detail });
  }

  /** A target whose ratio was measured elsewhere (another bench script). */
  ratio(target, ratio, factor, pass, detail = '') {
    this.rows.push({ target, measured: `${ratio.toFixed(2)}x`, limit: `≤ ${factor.toFixed(2)}x`, ratio, ratioText: `${ratio.toFixed(2)}x`, pass, detail });
  }

  /** A figure with no target: shown in the table, never a FAIL. */
  measured(target, measured, ratio, detail = '') {
    this.rows.push({ target, measured, limit: '-', ratio, ratioText: `${ratio.toFixed(2)}x`, pass: true, noTarget: true, detail });
  }

  failed(target, why) {
    this.rows.push({ target, measured: 'failed', limit: '', ratio: NaN, pass: false, detail: why });
  }

  /**
   * The report as the Markdown docs/performance.md shows (docs/performance-latest.md): when and on
   * what it ran, with the machine's own `node -e 0` beside it (every figure grows with it), then
   * one row per target. No verdict on past runs: each run replaces the file.
   */
  markdown({ date, machine, nodeStartupMs, command }) {
    const cell = (text) => String(text).replace(/\|/g, '\\|').replace(/\n/g, ' ');
    const lines = [
      '# Performance: the latest run',
      '',
      `Written by \`${command}\` (bench/run.mjs); see [performance.md](performance.md) for how to measure.`,
      '',
      `- run: ${date}`,
      `- machine: ${machine}`,
      `- \`node -e 0\` on it: ${Number.isNaN(nodeStartupMs) ? 'not measured in this run' : fmt(nodeStartupMs)}`,
      '',
      '| target | measured | target limit | ratio | verdict |',
      '|---|---|---|---|---|',
    ];
    for (const r of this.rows) {
      const ratio = r.ratioText ?? (Number.isNaN(r.ratio) ? '-' : r.ratio.toFixed(2));
      lines.push(`| ${cell(r.target)} | ${cell(r.measured)} | ${cell(r.limit)} | ${ratio} | ${r.noTarget ? '-' : r.pass ? 'PASS' : 'FAIL'} |`);
    }
    const misses = this.rows.filter((r) => !r.pass).length;
    const targets = this.rows.filter((r) => !r.noTarget).length;
    lines.push('', `${targets - misses} of ${targets} targets met.`);
    if (this.notes.length > 0) lines.push('', ...this.notes.map((n) => `- ${cell(n)}`));
    // Where each row's time went (cal's phases, the floor beside a ratio): what the console prints.
    const detailed = this.rows.filter((r) => r.detail);
    if (detailed.length > 0) lines.push('', '## Where the time went', '', ...detailed.map((r) => `- ${cell(r.target)}: ${cell(r.detail)}`));
    return `${lines.join('\n')}\n`;
  }

  print() {
    const lines = [];
    for (const r of this.rows) {
      lines.push(`${r.noTarget ? '    ' : r.pass ? 'PASS' : 'FAIL'}  ${r.target}`);
      lines.push(`      measured ${r.measured}; target ${r.limit}; ratio ${r.ratioText ?? (Number.isNaN(r.ratio) ? '-' : r.ratio.toFixed(2))}`);
      if (r.detail) lines.push(`      ${r.detail}`);
    }
    for (const n of this.notes) lines.push(`note: ${n}`);
    const misses = this.rows.filter((r) => !r.pass).length;
    const targets = this.rows.filter((r) => !r.noTarget).length;
    lines.push(`${targets - misses} of ${targets} targets met`);
    console.log(lines.join('\n'));
    return misses;
  }
}
