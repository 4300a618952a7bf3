import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, interruptedCal, runCal, scratchDir, type CalRun } from '../support/cal.js';
import { allFiles, fakeCli, kill9, readLog, spawnCal, until } from '../support/structured-fakes.js';

/**
 * Issue 19, Cursor CLI: the built `cal` against test/fakes/cursor-agent.mjs, a stand-in written
 * from Cursor's documented interface only (the real CLI cannot be installed here and cannot be
 * pointed at a local model). What these tests prove is that cal drives that documented interface
 * as the adapter says; that the real cursor-agent behaves as documented is for a user's live run
 * (`cal certify --provider cursor --live`).
 */
const SECRET = 'crsr_test_6f1d0c9a8b7e4a31b2c5';

describe('cursor (structured) against a stand-in of the documented cursor-agent', () => {
  let root: string;
  let state: string;
  let home: string;
  let log: string;
  let env: Record<string, string>;
  let n = 0;

  const cal = (args: string[], extra: Record<string, string> = {}): Promise<CalRun> => runCal(['--state-dir', state, ...args], { env: { ...env, ...extra } });
  const start = (work: string, message: string, ...more: string[]) => cal(['start', '--provider', 'cursor', '--cli-path', fakeCli.cursor, '--cwd', work, '--json', ...more, message]);
  /** The turn invocations (print mode) the stand-in received since `from`. */
  const turns = async (from = 0) => (await readLog(log)).slice(from).filter((r) => r.argv?.includes('-p'));
  const logLength = async () => (await readLog(log)).length;
  const newWork = async (): Promise<string> => {
    const dir = path.join(root, `work${++n}`);
    await fs.mkdir(dir);
    return realpathSync(dir);
  };
  const chatDir = (work: string, id: string) => path.join(home, '.cursor', 'chats', createHash('md5').update(work).digest('hex'), id);

  beforeAll(async () => {
    root = realpathSync(await scratchDir('cursor'));
    state = path.join(root, 'state');
    home = path.join(root, 'home');
    log = path.join(root, 'cursor-agent.log');
    await fs.mkdir(home);
    env = baseEnv({ HOME: home, FAKE_CURSOR_LOG: log, CURSOR_API_KEY: SECRET });
  });

  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it('start mints the chat with create-chat; every turn resumes it by id with only the new message, and the answer comes from the CLI', async () => {
    const work = await newWork();
    const from = await logLength();
    const first = await start(work, 'Remember the codeword TANGO.', '--name', 'tango');
    expect(first.code, first.stderr).toBe(0);
    expect(first.json.turn).toMatchObject({ status: 'completed', answer: 'I will remember the codeword TANGO.', tools: [] });
    const calls = (await readLog(log)).slice(from);
    const minted = calls.find((c) => c.argv[0] === 'create-chat');
    expect(minted.argv).toEqual(['create-chat', '--workspace', work, '--trust']);
    const inspect = await cal(['inspect', 'tango', '--json']);
    const id = inspect.json.provider.nativeSessionId as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(inspect.json.provider).toMatchObject({ provider: 'cursor', transport: 'structured', tmux: null, transcript: { path: path.join(chatDir(work, id), 'meta.json') } });
    expect(inspect.json.panes).toEqual([]);
    expect((await turns(from)).map((t) => t.argv)).toEqual([['-p', '--output-format', 'stream-json', '--trust', '--workspace', work, '--resume', id, '--', 'Remember the codeword TANGO.']]);

    // By name, then by handle id, from another folder: the same chat, resumed in its own folder.
    const mark = await logLength();
    const recall = await runCal(['--state-dir', state, 'continue', 'tango', 'What was the codeword?'], { env, cwd: root });
    expect(recall.code, recall.stderr).toBe(0);
    expect(recall.stdout.trim()).toBe('The codeword was TANGO.');
    const again = await cal(['continue', inspect.json.id, '--json', 'What was the codeword? (again)']);
    expect(again.json.turn.answer).toBe('The codeword was TANGO.');
    const resumed = await turns(mark);
    expect(resumed.map((t) => t.argv.slice(-4))).toEqual([
      ['--resume', id, '--', 'What was the codeword?'],
      ['--resume', id, '--', 'What was the codeword? (again)'],
    ]);
    expect(resumed.every((t) => t.cwd === work && t.argv.includes(work))).toBe(true);
    expect((await readLog(log)).slice(mark).some((c) => c.argv[0] === 'create-chat')).toBe(false);
    expect((await cal(['inspect', 'tango', '--json'])).json.provider.nativeSessionId).toBe(id);
  });

  it('a tool turn: the answer is the text after the tool call, the call is on the turn; --stream prints them before the end', async () => {
    const work = await newWork();
    const run = await start(work, 'Run it [[fake:shell=echo TOOL-OUT]]', '--stream');
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trim().split('\n').map((l) => JSON.parse(l));
    const final = lines.at(-1);
    expect(final.turn).toMatchObject({ status: 'completed', answer: 'You said: Run it [[fake:shell=echo TOOL-OUT]]' });
    expect(final.turn.tools).toEqual([{ kind: 'shell', name: 'echo TOOL-OUT', input: { command: 'echo TOOL-OUT' }, status: 'success', output: 'TOOL-OUT\n' }]);
    expect(lines.some((l) => l.type === 'tool' && l.name === 'echo TOOL-OUT')).toBe(true);
  });

  it('a failed turn (exit 1 without a result, or an is_error result) is turn_failed with the CLI\'s words; the session goes on', async () => {
    const work = await newWork();
    const first = await start(work, 'Remember the codeword RIVER.', '--name', 'river');
    expect(first.code).toBe(0);
    const noResult = await cal(['continue', 'river', '--json', 'Hello [[fake:fail]]']);
    expect(noResult.code).toBe(10);
    expect(noResult.json.turn.status).toBe('failed');
    expect(noResult.json.turn.answer).toBeNull();
    expect(noResult.json.error.message).toMatch(/without a result event with exit status 1: Error: stream closed/);
    const errorResult = await cal(['continue', 'river', '--json', 'Hello [[fake:error-result]]']);
    expect(errorResult.code).toBe(10);
    expect(errorResult.json.error.message).toContain('The model returned an error for this request');
    const recall = await cal(['continue', 'river', 'What was the codeword?']);
    expect(recall.stdout.trim()).toBe('The codeword was RIVER.');
  });

  it('"Authentication required" is a clear typed error; once signed in the same handle starts its chat', async () => {
    const work = await newWork();
    const signedOut = { ...env, FAKE_CURSOR_AUTH: 'logged-out' };
    delete (signedOut as Record<string, string | undefined>).CURSOR_API_KEY;
    const run = await runCal(['--state-dir', state, 'start', '--provider', 'cursor', '--cli-path', fakeCli.cursor, '--cwd', work, '--name', 'auth', '--json', 'Remember the codeword LOGIN.'], { env: signedOut });
    expect(run.code).toBe(10);
    expect(run.json.error).toMatchObject({ kind: 'turn_failed' });
    expect(run.json.error.message).toMatch(/cursor-agent is not signed in \(Authentication required\. Please run 'agent login' first\): run `cursor-agent login`, or set CURSOR_API_KEY/);
    // A start whose first turn failed gives its name back (issue 20, item 4); the handle goes on by its id.
    expect((await cal(['inspect', 'auth', '--json'])).code).toBe(3);
    const later = await cal(['continue', run.json.error.handle, '--json', 'Remember the codeword LOGIN.'], { FAKE_CURSOR_AUTH: 'logged-out' });
    expect(later.code, later.stderr).toBe(0);
    expect(later.json.turn.answer).toBe('I will remember the codeword LOGIN.');
  });

  it('"Workspace Trust Required" despite --trust is cli_unsupported (exit 16), naming the folder', async () => {
    const work = await newWork();
    const run = await cal(['start', '--provider', 'cursor', '--cli-path', fakeCli.cursor, '--cwd', work, '--json', 'Hello'], { FAKE_CURSOR_TRUST: 'ignored' });
    expect(run.code).toBe(16);
    expect(run.json.error.kind).toBe('cli_unsupported');
    expect(run.json.error.message).toContain(`cursor-agent refused ${work} as an untrusted workspace although cal passed --trust ("Workspace Trust Required")`);
  });

  // Issue 50, item 6: under --no-trust cal passes no --trust, and Cursor's own refusal is named as such.
  it('--no-trust: no --trust on the runs, and Cursor\'s "Workspace Trust Required" is untrusted_folder (exit 20), naming the folder', async () => {
    const work = await newWork();
    const from = await logLength();
    const run = await start(work, 'Hello', '--no-trust');
    expect(run.code, run.stderr).toBe(20);
    expect(run.json.error.kind).toBe('untrusted_folder');
    expect(run.json.error.message).toContain(`cursor-agent does not trust ${work}`);
    expect((await readLog(log)).slice(from).some((r) => r.argv?.includes('--trust'))).toBe(false);
  });

  it('a release whose --help lacks a needed flag is refused before any handle or chat exists (exit 16)', async () => {
    const work = await newWork();
    const own = path.join(root, 'state-old');
    const from = await logLength();
    const run = await runCal(['--state-dir', own, 'start', '--provider', 'cursor', '--cli-path', fakeCli.cursor, '--cwd', work, 'Hello'], { env: { ...env, FAKE_CURSOR_HELP: 'no-trust' } });
    expect(run.code).toBe(16);
    expect(run.stderr).toMatch(/^cal: cli_unsupported: cursor-agent 2026\.09\.18-9a7762b at .* lacks --trust in its --help/m);
    expect((await readLog(log)).slice(from).map((c) => c.argv[0])).toEqual(['--version', '--help']);
    expect((await runCal(['--state-dir', own, 'inspect', '--json'], { env })).json.handles).toEqual([]);
  });

  it('a chat whose store is gone is resume_unavailable (exit 9) and nothing is sent; --transport tmux and --system-prompt are usage errors', async () => {
    const work = await newWork();
    expect((await start(work, 'Remember the codeword GONE.', '--name', 'gone')).code).toBe(0);
    const id = (await cal(['inspect', 'gone', '--json'])).json.provider.nativeSessionId as string;
    await fs.rm(chatDir(work, id), { recursive: true });
    const mark = await logLength();
    const run = await cal(['continue', 'gone', '--json', 'What was the codeword?']);
    expect(run.code).toBe(9);
    expect(run.json.error.message).toContain(`Cursor's store of chat ${id} for ${work} is gone`);
    expect(await turns(mark)).toEqual([]);
    expect((await start(work, 'Hello', '--transport', 'tmux')).code).toBe(2);
    const prompt = await start(work, 'Hello', '--system-prompt', 'Be brief.');
    expect(prompt.code).toBe(2);
    expect(prompt.json.error.message).toMatch(/cursor-agent has no option for a system prompt/);
  });

  it('--mcp-config reaches the CLI through --plugin-dir (a folder named cal linking the file), never copied and never in ~/.cursor', async () => {
    const work = await newWork();
    const mcp = path.join(root, 'mcp.json');
    await fs.writeFile(mcp, JSON.stringify({ mcpServers: { probe: { command: 'node', args: ['probe.mjs'], env: { PROBE_TOKEN: 'mcp-secret-0b3c1d' } } } }));
    const from = await logLength();
    const run = await start(work, 'Hello with tools', '--mcp-config', mcp);
    expect(run.code, run.stderr).toBe(0);
    const calls = (await readLog(log)).slice(from);
    const turn = calls.find((c) => c.argv?.includes('-p'));
    const dir = turn.argv[turn.argv.indexOf('--plugin-dir') + 1];
    expect(path.basename(dir)).toBe('cal');
    expect(dir.startsWith(state)).toBe(true);
    expect(turn.argv).toContain('--approve-mcps');
    expect(calls.find((c) => c.plugin)).toEqual({ plugin: 'cal', mcpServers: ['probe'] });
    expect(await fs.readlink(path.join(dir, 'mcp.json'))).toBe(mcp);
    expect(await fs.readdir(path.join(home, '.cursor'))).toEqual(['chats']);
    for (const { file, text } of await allFiles(state)) expect(text, file).not.toContain('mcp-secret-0b3c1d');
  });

  it('CURSOR_API_KEY reaches the CLI through its environment only: never in its argv, cal\'s output, the handle or the state directory', async () => {
    const work = await newWork();
    const from = await logLength();
    const runs = [await start(work, 'Remember the codeword KEY.', '--name', 'key'), await cal(['continue', 'key', 'Hi [[fake:fail]]']), await cal(['inspect', 'key', '--json'])];
    const calls = (await readLog(log)).slice(from);
    expect(calls.filter((c) => c.argv).every((c) => c.apiKeyInEnv)).toBe(true);
    for (const c of calls) expect(JSON.stringify(c)).not.toContain(SECRET);
    for (const r of runs) expect(r.stdout + r.stderr).not.toContain(SECRET);
    for (const { file, text } of await allFiles(state)) expect(text, file).not.toContain(SECRET);
    expect(runs[2]!.json.provider.envNames).toContain('CURSOR_API_KEY');
  });

  it('recover never sends a turn it cannot settle: a turn whose cal died is marked lost; --retry-lost sends it once', async () => {
    const work = await newWork();
    const first = await start(work, 'Remember the codeword EMBER.', '--name', 'ember');
    expect(first.code).toBe(0);
    const mark = await logLength();
    const run = spawnCal(state, ['continue', 'ember', 'What was the codeword?'], { ...env, CAL_FAULT: 'before-send' });
    await until(() => run.stderr().includes('paused at fault point before-send'), 'the fault point');
    await kill9(run.child);
    const dry = await cal(['recover', '--dry-run', '--json']);
    expect(dry.json.turns.find((t: any) => t.message === 'What was the codeword?')).toMatchObject({ action: 'marked_lost' });
    expect(await turns(mark)).toEqual([]);
    const rec = await cal(['recover', '--retry-lost', '--json']);
    expect(rec.json.turns.find((t: any) => t.message === 'What was the codeword?')).toMatchObject({ action: 'retried_lost', status: 'completed', answer: 'The codeword was EMBER.' });
    expect((await turns(mark)).map((t) => t.argv.at(-1))).toEqual(['What was the codeword?']);
    const statuses = (await cal(['inspect', 'ember', '--json'])).json.turns.filter((t: any) => t.message === 'What was the codeword?').map((t: any) => t.status);
    expect(statuses).toEqual(['lost', 'completed']);
  });

  it('Ctrl-C during a turn, to the group (cal and cursor-agent) or to cal alone (its cancel): interrupted (11), the turn ran once, and the session goes on', async () => {
    const work = await newWork();
    expect((await start(work, 'Remember the codeword LARCH.', '--name', 'larch')).code).toBe(0);
    for (const group of [true, false]) {
      const message = `Interrupt me ${group ? 'at the terminal' : 'through cal'} [[fake:delay=8000]]`;
      const mark = await logLength();
      const run = await interruptedCal(state, ['continue', 'larch', '--json', message], env, { group, running: async () => (await turns(mark)).length > 0 });
      expect(run.code, run.stdout).toBe(11);
      expect(JSON.parse(run.stdout).turn).toMatchObject({ status: 'interrupted', answer: null });
      // Cancelled, not waited out: the stand-in would answer after 8 s.
      expect(run.ms).toBeLessThan(7000);
      expect((await turns(mark)).map((t) => t.argv.at(-1))).toEqual([message]);
    }
    const recall = await cal(['continue', 'larch', 'What was the codeword?']);
    expect(recall.stdout.trim()).toBe('The codeword was LARCH.');
  });

  it('certify: offline it says plainly that Cursor needs the real CLI and a login (exit 8); --live runs the structured certifications; inspect says "uncertified here" until a live run passed', async () => {
    const own = path.join(root, 'state-certify');
    const offline = await runCal(['--state-dir', own, 'certify', '--provider', 'cursor', '--cli-path', fakeCli.cursor], { env });
    expect(offline.code).toBe(8);
    expect(offline.stderr).toMatch(/^cal: non_applicable: cursor cannot be certified here: Cursor CLI cannot be pointed at a local model .* run: cal certify --provider cursor --live$/m);
    const work = await newWork();
    expect((await runCal(['--state-dir', own, 'start', '--provider', 'cursor', '--cli-path', fakeCli.cursor, '--cwd', work, '--name', 'c', 'Hello'], { env })).code).toBe(0);
    const before = await runCal(['--state-dir', own, 'inspect', 'c'], { env });
    expect(before.stdout).toMatch(/^certified {2}uncertified here: Cursor CLI cannot be pointed at a local model.*\(cal certify --provider cursor --live\)$/m);
    const live = await runCal(['--state-dir', own, 'certify', '--provider', 'cursor', '--cli-path', fakeCli.cursor, '--live', '--json'], { env });
    expect(live.code, live.stdout + live.stderr).toBe(0);
    const ran = live.json.results.filter((r: any) => r.result !== 'skip').map((r: any) => [r.id, r.result]);
    expect(ran).toEqual([['CertStableWorkingDir', 'pass'], ['CertStructuredResume', 'pass']]);
    const after = await runCal(['--state-dir', own, 'inspect', 'c', '--json'], { env });
    expect(after.json.uncertifiedHere).toBeUndefined();
  });
});
