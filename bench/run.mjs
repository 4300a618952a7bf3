#!/usr/bin/env node
// Benchmarks for the README's targets (run with `npm run bench`; they are not tests):
//  1. `cal --version` start-up time, median of 20 runs (target: under 150 ms).
//  2. `cal continue` on a live pane: time from the end-of-turn record reaching the transcript to
//     cal's exit, median of 10 turns with the real Claude Code and the scripted model (target:
//     within 100 ms).
import { spawn, spawnSync } from 'node:child_process';
import { watch } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cal = path.join(root, 'bin', 'cal.js');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function versionStartup() {
  const times = [];
  for (let i = 0; i < 20; i++) {
    const t = process.hrtime.bigint();
    const r = spawnSync(process.execPath, [cal, '--version']);
    if (r.status !== 0) throw new Error('cal --version failed');
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return times;
}

async function continueLatency() {
  const { startModelServer } = await import(path.join(root, 'dist', 'model', 'server.js'));
  const { AgentSessions } = await import(path.join(root, 'dist', 'sessions', 'agent-sessions.js'));
  const server = await startModelServer({});
  const scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'cal-bench-'));
  const state = path.join(scratch, 'state');
  const work = path.join(scratch, 'work');
  await fs.mkdir(work);
  const env = await AgentSessions.scriptedModelEnv('claude-code', scratch, server.url, { ...process.env, PATH: `${path.join(root, 'node_modules', '.bin')}:${process.env.PATH}` });
  const run = (args) =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, [cal, '--state-dir', state, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      child.on('exit', (code) => resolve({ code, out, err, exitedAt: performance.now() }));
    });
  try {
    const start = await run(['start', '--provider', 'claude-code', '--cwd', work, 'Remember the codeword BENCH.']);
    if (start.code !== 0) throw new Error(`start failed: ${start.err}`);
    const handle = /handle: (\S+)/.exec(start.err)[1];
    const view = JSON.parse((await run(['inspect', handle, '--json'])).out);
    const transcript = view.provider.transcript.path;
    const latencies = [];
    for (let i = 0; i < 10; i++) {
      let size = (await fs.stat(transcript)).size;
      let endSeenAt = null;
      const watcher = watch(transcript, async () => {
        const fh = await fs.open(transcript, 'r');
        const { size: now } = await fh.stat();
        const buf = Buffer.alloc(now - size);
        await fh.read(buf, 0, buf.length, size);
        await fh.close();
        if (endSeenAt === null && buf.toString().includes('"subtype":"turn_duration"')) endSeenAt = performance.now();
      });
      const res = await run(['continue', handle, `What was the codeword? (${i})`]);
      watcher.close();
      if (res.code !== 0 || endSeenAt === null) throw new Error(`turn ${i} failed: ${res.err}`);
      latencies.push(res.exitedAt - endSeenAt);
      size = (await fs.stat(transcript)).size;
    }
    return latencies;
  } finally {
    spawnSync('tmux', ['-S', path.join(state, 'tmux', 'tmux.sock'), 'kill-server']);
    await server.close();
    await fs.rm(scratch, { recursive: true, force: true });
  }
}

const version = versionStartup();
console.log(`cal --version start-up: median ${median(version).toFixed(1)} ms (min ${Math.min(...version).toFixed(1)}, max ${Math.max(...version).toFixed(1)}, n=${version.length}; target < 150 ms)`);
const latencies = await continueLatency();
console.log(`cal continue, end-of-turn record to exit: median ${median(latencies).toFixed(1)} ms (min ${Math.min(...latencies).toFixed(1)}, max ${Math.max(...latencies).toFixed(1)}, n=${latencies.length}; target < 100 ms)`);
