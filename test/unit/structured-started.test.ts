import { spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claudeStructured } from '../../src/adapters/claude-code/structured.js';
import { startJsonlProcess } from '../../src/adapters/structured-process.js';
import { discardEarlyLaunch, recordNextLaunch, takeEarlyLaunch } from '../../src/adapters/early-launch.js';
import { claudeEnv } from '../../src/adapters/claude-code/launch.js';
import { startEarly } from '../../src/commands/early-start.js';
import { repoRoot } from '../support/clis.js';
import { processStartTime } from '../../src/util/process-identity.js';
import { processExists, until } from '../support/structured-fakes.js';
import { defaultConfig, fakeClaude, fakeEnv, fakeRequest, gotInputIn, startedIn, type FakeClaude } from '../support/fake-held-claude.js';
import type { StructuredRunRequest } from '../../src/adapters/types.js';

describe('a structured CLI started before its message', () => {
  let fake: FakeClaude;
  let dir: string;
  let exe: string;
  let transcript: string;
  const started = () => startedIn(fake);
  const gotInput = (pid: number) => gotInputIn(fake, pid);
  beforeEach(async () => {
    fake = await fakeClaude('cal-started-');
    ({ dir, exe, transcript } = fake);
  });
  afterEach(async () => fs.rm(dir, { recursive: true, force: true }));
  const env = () => fakeEnv(fake);
  const request = (message: string, over: Partial<StructuredRunRequest> = {}) => fakeRequest(fake, message, over);

  it('the held process runs before anything is written to it; send hands it the input and follows it to its end', async () => {
    const held = startJsonlProcess({ argv: [exe, '--resume', 's'], env: env(), cwd: dir });
    await until(() => started().length === 1, 'the process to start');
    const pid = started()[0] as number;
    expect(held.pid).toBe(pid);
    expect(held.waiting).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    expect(gotInput(pid)).toBe(false);
    const events: unknown[] = [];
    const res = await held.send(`${JSON.stringify({ type: 'user', message: { content: [{ type: 'text', text: 'hello' }] } })}\n`, { timeoutMs: 10_000, onEvent: (e) => events.push(e) });
    expect(res).toMatchObject({ exitCode: 0, timedOut: false, otherLines: 0 });
    expect(events.at(-1)).toMatchObject({ type: 'result', result: `pid ${pid}: hello` });
    expect(held.waiting).toBe(false);
  });

  it('discard kills a held process that was never sent anything', async () => {
    const held = startJsonlProcess({ argv: [exe], env: env(), cwd: dir });
    await until(() => started().length === 1, 'the process to start');
    const pid = started()[0] as number;
    expect(processExists(pid)).toBe(true);
    held.discard();
    await until(() => !processExists(pid), 'the discarded process to end');
    expect(gotInput(pid)).toBe(false);
    expect(() => held.send('x', { timeoutMs: 1000, onEvent: () => undefined })).toThrow(/discarded/);
  });

  it('a held process that ends before its input (EPIPE) is reported by its exit, not a crash', async () => {
    const held = startJsonlProcess({ argv: ['/bin/sh', '-c', 'echo gone >&2; exit 3'], env: env(), cwd: dir });
    await new Promise((r) => setTimeout(r, 300));
    expect(held.waiting).toBe(false);
    const res = await held.send('x'.repeat(1 << 20), { timeoutMs: 10_000, onEvent: () => undefined });
    expect(res).toMatchObject({ exitCode: 3, stderr: 'gone\n' });
  });

  it('claude-code: a started turn sent the same launch is that very process; the message goes as one stream-json line', async () => {
    const early = claudeStructured.start?.(request(''));
    expect(early).toBeTruthy();
    await until(() => started().length === 1, 'the early claude to start');
    const pid = started()[0] as number;
    let spawned: number | undefined;
    const res = await early!.run({ ...request('/compact now'), onSpawned: (p) => (spawned = p) });
    expect(spawned).toBe(pid);
    // The message as the engine prepared it, whole (the headless guard is the engine's: message-guards.test.ts).
    expect(res).toMatchObject({ status: 'completed', answer: `pid ${pid}: /compact now`, sessionId: 'session-1', transcriptPath: transcript });
    expect(started()).toEqual([pid]);
    early!.discard();
  });

  it('claude-code: a transcript that changed since the start (another turn ran), or another launch, discards the early process and launches afresh', async () => {
    const early = claudeStructured.start?.(request(''));
    await until(() => started().length === 1, 'the early claude to start');
    const first = started()[0] as number;
    expect(processExists(first)).toBe(true);
    appendFileSync(transcript, '{"type":"assistant"}\n');
    const res = await early!.run(request('after another turn'));
    const second = started().find((p) => p !== first) as number;
    expect(res.answer).toBe(`pid ${second}: after another turn`);
    await until(() => !processExists(first), 'the early process to be discarded');
    expect(gotInput(first)).toBe(false);

    const again = claudeStructured.start?.(request(''));
    await until(() => started().length === 3, 'the third claude to start');
    const third = started().find((p) => p !== first && p !== second) as number;
    const other = await again!.run(request('with a model now', { config: { cwd: dir, model: 'opus', systemPrompt: null, mcpConfigPath: null, toolPolicy: 'default' } }));
    expect(other.answer).not.toContain(`pid ${third}:`);
    await until(() => !processExists(third), 'the early process to be discarded');
    expect(gotInput(third)).toBe(false);
  });

  it('claude-code: a turn cancelled before the send sends nothing, early process or not', async () => {
    const early = claudeStructured.start?.(request(''));
    await until(() => started().length === 1, 'the early claude to start');
    const pid = started()[0] as number;
    const cancel = new AbortController();
    cancel.abort();
    await expect(early!.run({ ...request('never sent'), signal: cancel.signal })).rejects.toMatchObject({ kind: 'interrupted' });
    await until(() => !processExists(pid), 'the early process to be discarded');
    expect(gotInput(pid)).toBe(false);
    await expect(claudeStructured.run({ ...request('never sent either'), signal: cancel.signal })).rejects.toMatchObject({ kind: 'interrupted' });
    expect(started()).toEqual([pid]);
  });

  it('claude-code: the result event ends the turn; a CLI still finishing after it is not waited for, and says so', async () => {
    const req = request('answer and linger', { env: { ...env(), FAKE_LINGER_MS: '1500' } });
    const began = Date.now();
    const result = await claudeStructured.run(req);
    expect(result).toMatchObject({ status: 'completed', cliRunning: true, answer: expect.stringMatching(/: answer and linger$/) });
    expect(Date.now() - began).toBeLessThan(1400);
    const pid = Number(/^pid (\d+):/.exec(result.answer ?? '')?.[1]);
    expect(processExists(pid)).toBe(true);
    // It exits by itself, its last writes done.
    await until(() => existsSync(path.join(dir, `exited-${pid}`)) && !processExists(pid), 'the CLI to finish and exit');
    // Without a linger the exit and the result come together: either way the answer is the same.
    const quick = await claudeStructured.run(request('quick'));
    expect(quick).toMatchObject({ status: 'completed', answer: expect.stringMatching(/: quick$/) });
  });

  it('claude-code: no early start for a first turn (no session to resume yet)', () => {
    expect(claudeStructured.start?.(request('', { mode: 'fresh', sessionId: 'new-id' }))).toBeNull();
  });
});

/**
 * The same launch started by cal's entry before its modules load (commands/early-start.ts,
 * sessions/early-start.ts, adapters/early-launch.ts), from the record the previous turn left in
 * the handle's folder.
 */
describe("a structured CLI started by cal's entry", () => {
  let fake: FakeClaude;
  let dir: string;
  let transcript: string;
  let state: string;
  let sessionDir: string;
  const id = 'abc123def';
  const started = () => startedIn(fake);
  const gotInput = (pid: number) => gotInputIn(fake, pid);
  const env = () => fakeEnv(fake);
  const config = defaultConfig;
  const request = (message: string, over: Partial<StructuredRunRequest> = {}) => fakeRequest(fake, message, over);
  const launchOf = (req: StructuredRunRequest) => claudeStructured.nextLaunch!(req)!;
  const record = (req = request('')) => recordNextLaunch(sessionDir, 'claude-code', launchOf(req), req.env, req.knownTranscript ?? null);
  const argv = (...args: string[]) => ['node', 'cal', ...args];
  const entry = (...args: string[]) => startEarly(argv(...args), env());

  beforeEach(async () => {
    fake = await fakeClaude('cal-early-');
    ({ dir, transcript } = fake);
    state = path.join(dir, 'state');
    sessionDir = path.join(state, 'homes', id);
    mkdirSync(sessionDir, { recursive: true, mode: 0o700 });
    // The handle the record is for (only the fields the entry checks by hand; issue 40).
    mkdirSync(path.join(state, 'handles'), { mode: 0o700 });
    writeHandle(handleFor());
  });
  const handleFile = () => path.join(state, 'handles', `${id}.json`);
  const handleFor = (over: Record<string, unknown> = {}) => ({
    id,
    provider: { provider: 'claude-code', transport: 'structured', workingDir: { path: dir, realPath: dir }, transcript: { path: transcript, offset: 0 }, ...over },
  });
  const writeHandle = (handle: unknown) => writeFileSync(handleFile(), JSON.stringify(handle), { mode: 0o600 });
  afterEach(async () => {
    discardEarlyLaunch('the test is over');
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('the recorded launch holds what the adapter set, never the caller\'s own values, in a 0600 file; a secret-like variable is never written', async () => {
    await record();
    const file = path.join(sessionDir, 'next-launch.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const written = JSON.parse(readFileSync(file, 'utf8'));
    expect(written).toEqual({ provider: 'claude-code', argv: launchOf(request('')).argv, cwd: dir, set: { ...claudeEnv }, unset: [], transcript });
    expect(JSON.stringify(written)).not.toContain(process.env.PATH ?? '');
    // An adapter setting (not passing through) a secret-like variable: no record at all.
    const secret = { ...launchOf(request('')), env: { ...launchOf(request('')).env, SOME_API_TOKEN: 'tok-secret' } };
    await recordNextLaunch(sessionDir, 'claude-code', secret, env(), transcript);
    expect(existsSync(file)).toBe(false);
  });

  it('`continue <id>` starts the recorded launch at once, and the turn\'s start takes that very process', async () => {
    await record();
    entry('--state-dir', state, 'continue', id, 'hello');
    await until(() => started().length === 1, 'the CLI started by the entry');
    const pid = started()[0] as number;
    expect(gotInput(pid)).toBe(false);
    const early = claudeStructured.start!(request(''));
    const res = await early!.run(request('hello'));
    expect(res.answer).toBe(`pid ${pid}: hello`);
    expect(started()).toEqual([pid]);
  });

  it('another launch, or a transcript that changed since the entry started it: killed unsent, and the turn launches its own', async () => {
    // Recorded with another model than the turn now launches with.
    await record(request('', { config: { ...config, cwd: dir, model: 'opus' } }));
    entry('--state-dir', state, 'continue', id, 'x');
    await until(() => started().length === 1, 'the CLI started by the entry');
    const first = started()[0] as number;
    const res = await claudeStructured.start!(request(''))!.run(request('other launch'));
    await until(() => !processExists(first), 'the early CLI to be killed');
    expect(gotInput(first)).toBe(false);
    expect(res.answer).toMatch(/^pid \d+: other launch$/);
    expect(res.answer).not.toContain(`pid ${first}:`);

    await record();
    entry(`--state-dir=${state}`, 'continue', id, 'x');
    await until(() => started().length === 3, 'the second CLI started by the entry');
    const second = Math.max(...started().filter((p) => p !== first && !res.answer!.includes(`pid ${p}:`)));
    appendFileSync(transcript, '{"type":"assistant"}\n');
    const again = await claudeStructured.start!(request(''))!.run(request('after another turn'));
    await until(() => !processExists(second), 'the early CLI to be killed');
    expect(gotInput(second)).toBe(false);
    expect(again.answer).not.toContain(`pid ${second}:`);
  });

  it('starts nothing unless the command line, the state directory and the record are as cal makes them', async () => {
    await record();
    const file = path.join(sessionDir, 'next-launch.json');
    const good = readFileSync(file, 'utf8');
    const nothing = async (what: string, run: () => void) => {
      run();
      expect(takeEarlyLaunch(launchOf(request('')), transcript), what).toBeNull();
    };
    await nothing('turned off', () => startEarly(argv('--state-dir', state, 'continue', id, 'x'), { ...env(), CAL_EARLY_LAUNCH: '0' }));
    await nothing('an option before the handle', () => entry('--state-dir', state, 'continue', '--json', id, 'x'));
    await nothing('a handle name', () => entry('--state-dir', state, 'continue', 'My-chat', 'x'));
    await nothing('another command', () => entry('--state-dir', state, 'inspect', id));
    await nothing('no such handle', () => entry('--state-dir', state, 'continue', 'zzz999zzz', 'x'));
    for (const [what, folder] of [['the state directory', state], ['homes/', path.join(state, 'homes')], ["the handle's folder", sessionDir]] as const) {
      chmodSync(folder, 0o770);
      await nothing(`${what} group-writable`, () => entry('--state-dir', state, 'continue', id, 'x'));
      chmodSync(folder, 0o700);
    }
    chmodSync(file, 0o666);
    await nothing('the record writable by others', () => entry('--state-dir', state, 'continue', id, 'x'));
    rmSync(file);
    const elsewhere = path.join(dir, 'planted.json');
    writeFileSync(elsewhere, good, { mode: 0o600 });
    symlinkSync(elsewhere, file);
    await nothing('the record a symlink', () => entry('--state-dir', state, 'continue', id, 'x'));
    rmSync(file);
    const parsed = JSON.parse(good);
    for (const [what, bad] of [
      ['not JSON', '{"argv": ['],
      ['a relative executable', JSON.stringify({ ...parsed, argv: ['claude', '-p'] })],
      ['no argv', JSON.stringify({ ...parsed, argv: [] })],
      ['an environment value that is not text', JSON.stringify({ ...parsed, set: { A: 1 } })],
      ['a NUL byte', JSON.stringify({ ...parsed, argv: [...parsed.argv, 'a\0b'] })],
    ] as const) {
      writeFileSync(file, bad, { mode: 0o600 });
      await nothing(what, () => entry('--state-dir', state, 'continue', id, 'x'));
      rmSync(file);
    }
    await new Promise((r) => setTimeout(r, 200));
    expect(started()).toEqual([]);
    // The control: the same record, put back as cal writes it.
    writeFileSync(file, good, { mode: 0o600 });
    entry('--state-dir', state, 'continue', id, 'x');
    expect(takeEarlyLaunch(launchOf(request('')), transcript)).not.toBeNull();
  });

  it('a record runs nothing unless its handle is there, is this handle, is the one it was written for (issue 40), and its last CLI has exited', async () => {
    await record();
    const nothing = async (what: string) => {
      entry('--state-dir', state, 'continue', id, 'x');
      expect(takeEarlyLaunch(launchOf(request('')), transcript), what).toBeNull();
    };
    const good = handleFor();
    rmSync(handleFile());
    await nothing('no handle file');
    for (const [what, bad] of [
      ['another id inside', { ...good, id: 'zzz999zzz' }],
      ['another working directory', handleFor({ workingDir: { path: os.tmpdir(), realPath: os.tmpdir() } })],
      ['another transcript', handleFor({ transcript: { path: `${transcript}.other`, offset: 0 } })],
      ['no transcript', handleFor({ transcript: null })],
      ['a tmux handle', handleFor({ transport: 'tmux' })],
      ['another provider', handleFor({ provider: 'codex' })],
      // The turn waits for it, and what it writes as it exits would discard the early one.
      ['the last turn\'s CLI still finishing', handleFor({ cliProcess: { pid: process.pid, startTime: processStartTime(process.pid) } })],
      ['not an object', 'claude'],
    ] as const) {
      writeHandle(bad);
      await nothing(what);
    }
    writeHandle(good), writeFileSync(handleFile(), '{"id":', { mode: 0o600 });
    await nothing('a handle file that is not JSON');
    writeHandle(good), chmodSync(handleFile(), 0o666);
    await nothing('a handle file writable by others');
    rmSync(handleFile());
    const elsewhere = path.join(dir, 'planted-handle.json');
    writeFileSync(elsewhere, JSON.stringify(good), { mode: 0o600 });
    symlinkSync(elsewhere, handleFile());
    await nothing('a handle file that is a symlink');
    rmSync(handleFile()), writeHandle(good), chmodSync(path.join(state, 'handles'), 0o770);
    await nothing('handles/ group-writable');
    chmodSync(path.join(state, 'handles'), 0o700);
    writeFileSync(path.join(state, 'handles', `${id}.removed`), '{}', { mode: 0o600 });
    await nothing('a handle removed (its mark left by cal remove)');
    rmSync(path.join(state, 'handles', `${id}.removed`));
    await new Promise((r) => setTimeout(r, 200));
    expect(started()).toEqual([]);
    // The control: the handle as cal keeps it.
    entry('--state-dir', state, 'continue', id, 'x');
    expect(takeEarlyLaunch(launchOf(request('')), transcript)).not.toBeNull();
  });

  it('a CLI the entry started and no turn took is killed when cal exits, never left its empty stdin', async () => {
    await record();
    const script = `
      const { startEarly } = await import(${JSON.stringify(path.join(repoRoot, 'dist', 'commands', 'early-start.js'))});
      startEarly(['node', 'cal', '--state-dir', ${JSON.stringify(state)}, 'continue', ${JSON.stringify(id)}, 'x'], process.env);
      const fs = await import('node:fs');
      while (!fs.readdirSync(${JSON.stringify(dir)}).some((f) => f.startsWith('started-'))) await new Promise((r) => setTimeout(r, 10));
      process.exit(0);`;
    const trace = path.join(dir, 'trace');
    const res = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: { ...env(), CAL_TRACE_TIMING: trace }, encoding: 'utf8', timeout: 20_000 });
    expect(res.status, res.stderr).toBe(0);
    const pid = started()[0] as number;
    await until(() => !processExists(pid), 'the early CLI to end');
    // An end on its stdin's close would have read it (empty): a kill reads nothing.
    expect(gotInput(pid)).toBe(false);
    // Every discard says why in the timing trace (a silent one hid Codex's unused early start).
    expect(readFileSync(trace, 'utf8')).toMatch(/ early-launch-unused "nothing took it before cal exited"\n/);
  });
});
