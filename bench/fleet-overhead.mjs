#!/usr/bin/env node
// Benchmark (not a test): what a fleet adds to a turn (docs/fleet.md). The same turn through the
// library, on one machine (openSessions({ stateDir })) and through a fleet on loopback
// (openSessions({ fleet }) with one `cal worker` on a redis-server of its own), turns in pairs,
// alternating which goes first; the median difference is the fleet's overhead per turn
// (target ≤ 50 ms). Then turns per minute with 1, 2 and 3 workers (reported, no target).
// The CLI is test/fakes/cursor-agent.mjs (structured, no model wait), so the figure is cal's and
// the fleet's own time, not a model's.
//
//   npm run build && node bench/fleet-overhead.mjs       (BENCH_TURNS=15; writes docs/performance-fleet.md, or BENCH_OUT=<file>)
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { calBin, median, Report, root } from './lib.mjs';

const TURNS = Number(process.env.BENCH_TURNS ?? 15);
const TARGET_MS = 50;
const { openSessions } = await import(path.join(root, 'dist', 'index.js'));

const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

async function until(check, what, ms = 30_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'cal-bench-fleet-'));
const children = [];
const bin = path.join(dir, 'bin');
await fs.mkdir(bin);
await fs.symlink(path.join(root, 'test', 'fakes', 'cursor-agent.mjs'), path.join(bin, 'cursor-agent'));
const work = path.join(dir, 'work');
await fs.mkdir(work);
const env = (name) => {
  const e = { ...process.env, HOME: path.join(dir, name, 'home'), PATH: `${bin}:${process.env.PATH}`, CURSOR_API_KEY: 'bench' };
  delete e.NODE_EXTRA_CA_CERTS;
  delete e.CAL_FLEET;
  return e;
};

async function startRedis() {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir], { stdio: ['ignore', 'pipe', 'ignore'] });
  children.push(child);
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  await until(() => out.includes('Ready to accept connections'), 'redis-server');
  return `redis://127.0.0.1:${port}`;
}

async function startWorker(url, host) {
  await fs.mkdir(path.join(dir, host, 'home'), { recursive: true });
  const child = spawn(process.execPath, [calBin, '--state-dir', path.join(dir, host, 'state'), '--fleet', url, 'worker', '--host', host, '--slots', '4'], { env: env(host), stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  await until(() => err.includes('ready'), `worker ${host}`);
  return child;
}

const report = new Report();
try {
  const url = await startRedis();
  await fs.mkdir(path.join(dir, 'local', 'home'), { recursive: true });
  const local = await openSessions({ stateDir: path.join(dir, 'local', 'state'), env: env('local') });
  await startWorker(url, 'b1');
  const fleet = await openSessions({ fleet: { connection: url } });
  const a = await local.start({ provider: 'cursor', cwd: work, message: 'Remember the codeword LOCAL.' });
  const b = await fleet.start({ provider: 'cursor', cwd: work, message: 'Remember the codeword FLEET.' });
  const time = async (fn) => {
    const t0 = performance.now();
    await fn();
    return performance.now() - t0;
  };
  const localMs = [];
  const fleetMs = [];
  for (let i = 0; i < TURNS; i++) {
    const one = () => time(() => local.continue(a.handle.id, `Turn ${i}`)).then((ms) => localMs.push(ms));
    const two = () => time(() => fleet.continue(b.handle.id, `Turn ${i}`)).then((ms) => fleetMs.push(ms));
    if (i % 2 === 0) await one().then(two);
    else await two().then(one);
  }
  const overheads = localMs.map((ms, i) => fleetMs[i] - ms);
  report.absolute('fleet overhead per turn (median, loopback)', median(overheads), TARGET_MS, `one machine ${median(localMs).toFixed(1)} ms, fleet ${median(fleetMs).toFixed(1)} ms, ${TURNS} turns each`);

  // Turns per minute: 6 sessions continued 4 times each, at once, with 1, 2 then 3 workers.
  for (const workers of [1, 2, 3]) {
    if (workers > 1) await startWorker(url, `b${workers}`);
    const handles = await Promise.all(Array.from({ length: 6 }, (_, i) => fleet.start({ provider: 'cursor', cwd: work, message: `Remember the codeword W${workers}S${i}.` })));
    const t0 = performance.now();
    await Promise.all(handles.map(async (h) => {
      for (let k = 0; k < 4; k++) await fleet.continue(h.handle.id, `Again ${k}`);
    }));
    const perMinute = (24 / (performance.now() - t0)) * 60_000;
    const spread = new Set(handles.map((h) => h.handle.host)).size;
    report.notes.push(`${workers} worker${workers > 1 ? 's' : ''}: ${perMinute.toFixed(0)} turns per minute (24 turns of 6 sessions on ${spread} host${spread > 1 ? 's' : ''})`);
  }
  await fleet.close();
} catch (err) {
  report.failed('fleet overhead per turn', err instanceof Error ? err.message : String(err));
} finally {
  for (const c of children.reverse()) c.kill('SIGKILL');
  await fs.rm(dir, { recursive: true, force: true });
}
const misses = report.print();
// Its results land in docs/performance-fleet.md (BENCH_OUT to write elsewhere).
{
  const out = process.env.BENCH_OUT ?? path.join(root, 'docs', 'performance-fleet.md');
  const cpus = os.cpus();
  const machine = `${cpus.length} cores (${cpus[0]?.model ?? '?'}), ${os.platform()} ${os.release()}, node ${process.version}`;
  await fs.writeFile(out, report.markdown({ date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC', machine, nodeStartupMs: NaN, command: 'node bench/fleet-overhead.mjs' }));
}
process.exit(misses === 0 ? 0 : 1);
