import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { processExited, processRuns, processStartTime } from '../../src/util/process-identity.js';
import { processRunning } from '../../src/util/tagged-processes.js';

/**
 * processExited (and processRunning, its negation for tagged processes), which lets a paste into a pane whose process has ended skip its tmux client:
 * a zombie (a child its parent never reaped, as a pane's CLI reparented to an init that reaps
 * late) has ended; a running process, cal's own included, has not.
 */
const started: number[] = [];
afterEach(() => {
  for (const pid of started.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

const linux = process.platform === 'linux';

describe('processExited', () => {
  it('a running process has not ended; a pid no process has, and nonsense pids, are told apart', () => {
    expect(processExited(process.pid)).toBe(false);
    expect(processExited(0)).toBe(false);
    expect(processExited(-1)).toBe(false);
    expect(processExited(1.5)).toBe(false);
    // Far above any pid_max: no such process.
    expect(processExited(2 ** 30)).toBe(true);
  });

  it.skipIf(!linux)('a zombie has ended, while the parent that never reaps it runs on', async () => {
    // The shell starts a short child, then becomes a `sleep` that never waits for it.
    const parent = spawn('/bin/sh', ['-c', 'sleep 0.05 & echo $!; exec sleep 5'], { stdio: ['ignore', 'pipe', 'ignore'] });
    started.push(parent.pid!);
    const zombie = await new Promise<number>((resolve) => parent.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
    for (let i = 0; i < 100 && !readFileSync(`/proc/${zombie}/stat`, 'utf8').includes(') Z '); i++) await new Promise((r) => setTimeout(r, 20));
    expect(readFileSync(`/proc/${zombie}/stat`, 'utf8')).toContain(') Z ');
    expect(processExited(zombie)).toBe(true);
    expect(processExited(parent.pid!)).toBe(false);
    // The same answer for the lost pane's tagged processes, which cal waits to see ended.
    expect(await processRunning(zombie)).toBe(false);
    expect(await processRunning(parent.pid!)).toBe(true);
    expect(await processRunning(2 ** 30)).toBe(false);
  });
});

describe('processRuns (a CLI on record, by pid and start time)', () => {
  it.skipIf(!linux)('runs while the same process lives; not as a zombie, nor under another start time', async () => {
    const parent = spawn('/bin/sh', ['-c', 'sleep 0.05 & echo $!; exec sleep 5'], { stdio: ['ignore', 'pipe', 'ignore'] });
    started.push(parent.pid!);
    const zombie = await new Promise<number>((resolve) => parent.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
    const zombieStart = processStartTime(zombie);
    const parentStart = processStartTime(parent.pid!);
    expect(processRuns(parent.pid!, parentStart)).toBe(true);
    expect(processRuns(parent.pid!, `${Number(parentStart) + 1}`)).toBe(false);
    for (let i = 0; i < 100 && !readFileSync(`/proc/${zombie}/stat`, 'utf8').includes(') Z '); i++) await new Promise((r) => setTimeout(r, 20));
    expect(processRuns(zombie, zombieStart)).toBe(false);
    expect(processRuns(2 ** 30, null)).toBe(false);
  });
});
