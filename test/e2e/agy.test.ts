import { realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, interruptedCal, runCal, scratchDir, type CalRun } from '../support/cal.js';
import { allFiles, fakeCli, readLog } from '../support/structured-fakes.js';

/**
 * Issue 19, Agy (Google's Antigravity CLI): the built `cal` against test/fakes/agy.mjs, a
 * stand-in written from agy's documented interface only (release notes, docs mirrors, third-party
 * parsers). It proves that cal drives that interface as the adapter says, and refuses a release
 * without it; that the real agy behaves as documented is for a user's live run
 * (`cal certify --provider agy --live`).
 */
const SECRET = 'agy_test_token_93c0a6f2d1';

describe('agy (structured) against a stand-in of the documented agy', () => {
  let root: string;
  let state: string;
  let home: string;
  let log: string;
  let env: Record<string, string>;
  let n = 0;

  const cal = (args: string[], extra: Record<string, string> = {}): Promise<CalRun> => runCal(['--state-dir', state, ...args], { env: { ...env, ...extra } });
  const start = (work: string, message: string, ...more: string[]) => cal(['start', '--provider', 'agy', '--cli-path', fakeCli.agy, '--cwd', work, '--json', ...more, message]);
  const turns = async (from = 0) => (await readLog(log)).slice(from).filter((r) => r.argv.includes('-p'));
  const logLength = async () => (await readLog(log)).length;
  const newWork = async (): Promise<string> => {
    const dir = path.join(root, `work${++n}`);
    await fs.mkdir(dir);
    return realpathSync(dir);
  };

  beforeAll(async () => {
    root = realpathSync(await scratchDir('agy'));
    state = path.join(root, 'state');
    home = path.join(root, 'home');
    log = path.join(root, 'agy.log');
    await fs.mkdir(home);
    env = baseEnv({ HOME: home, FAKE_AGY_LOG: log, GOOGLE_OAUTH_ACCESS_TOKEN: SECRET });
  });

  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it('the first turn takes agy\'s own conversation id from init; every later turn resumes it with --conversation and only the new message', async () => {
    const work = await newWork();
    const from = await logLength();
    const first = await start(work, 'Remember the codeword KIWI.', '--name', 'kiwi');
    expect(first.code, first.stderr).toBe(0);
    expect(first.json.turn).toMatchObject({ status: 'completed', answer: 'I will remember the codeword KIWI.' });
    const handle = (await cal(['inspect', 'kiwi', '--json'])).json;
    const id = handle.provider.nativeSessionId as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(handle.provider).toMatchObject({
      provider: 'agy',
      transport: 'structured',
      tmux: null,
      transcript: { path: path.join(home, '.gemini', 'antigravity-cli', 'brain', id, '.system_generated', 'logs', 'transcript_full.jsonl') },
    });
    // cal's own pending id never reaches agy (it cannot be given one).
    expect((await turns(from)).map((t) => t.argv)).toEqual([['--output-format', 'stream-json', '--add-dir', work, '--print-timeout', '600s', '-p', 'Remember the codeword KIWI.']]);

    const mark = await logLength();
    const recall = await runCal(['--state-dir', state, 'continue', handle.id, 'What was the codeword?'], { env, cwd: root });
    expect(recall.code, recall.stderr).toBe(0);
    expect(recall.stdout.trim()).toBe('The codeword was KIWI.');
    const again = await cal(['continue', 'kiwi', '--json', 'What was the codeword? (again)']);
    expect(again.json.turn.answer).toBe('The codeword was KIWI.');
    const resumed = await turns(mark);
    expect(resumed.map((t) => t.argv)).toEqual([
      ['--output-format', 'stream-json', '--conversation', id, '--add-dir', work, '--print-timeout', '600s', '-p', 'What was the codeword?'],
      ['--output-format', 'stream-json', '--conversation', id, '--add-dir', work, '--print-timeout', '600s', '-p', 'What was the codeword? (again)'],
    ]);
    expect(resumed.every((t) => t.cwd === work)).toBe(true);
    expect((await cal(['inspect', 'kiwi', '--json'])).json.provider.nativeSessionId).toBe(id);
  });

  it('an empty result.response after a tool turn: the answer is the agent text accumulated after the tool; the tool is on the turn', async () => {
    const work = await newWork();
    const run = await start(work, 'Go [[fake:shell=echo AGY-OUT]] [[fake:empty-response]]');
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn.answer).toBe('You said: Go [[fake:shell=echo AGY-OUT]] [[fake:empty-response]]');
    expect(run.json.turn.tools).toEqual([{ kind: 'tool', name: 'run_command', input: { command: 'echo AGY-OUT' }, output: 'AGY-OUT\n', status: 'completed' }]);
  });

  it('a failed turn (exit 1 without a result, or a result that is not SUCCESS) is turn_failed with the CLI\'s words; the session goes on', async () => {
    const work = await newWork();
    expect((await start(work, 'Remember the codeword PEAR.', '--name', 'pear')).code).toBe(0);
    const noResult = await cal(['continue', 'pear', '--json', 'Hello [[fake:fail]]']);
    expect(noResult.code).toBe(10);
    expect(noResult.json.turn).toMatchObject({ status: 'failed', answer: null });
    expect(noResult.json.error.message).toMatch(/agy ended without a result event with exit status 1: .*Error: the language server closed the stream/);
    const errorResult = await cal(['continue', 'pear', '--json', 'Hello [[fake:error-result]]']);
    expect(errorResult.code).toBe(10);
    expect(errorResult.json.error.message).toBe('the turn failed: the model returned an error for this request');
    const recall = await cal(['continue', 'pear', 'What was the codeword?']);
    expect(recall.stdout.trim()).toBe('The codeword was PEAR.');
  });

  it('Ctrl-C during a turn, to the group (cal and agy) or to cal alone (its cancel): interrupted (11), the turn ran once, and the session goes on', async () => {
    const work = await newWork();
    expect((await start(work, 'Remember the codeword ALDER.', '--name', 'alder')).code).toBe(0);
    for (const group of [true, false]) {
      const message = `Interrupt me ${group ? 'at the terminal' : 'through cal'} [[fake:delay=8000]]`;
      const mark = await logLength();
      const run = await interruptedCal(state, ['continue', 'alder', '--json', message], env, { group, running: async () => (await turns(mark)).length > 0 });
      expect(run.code, run.stdout).toBe(11);
      expect(JSON.parse(run.stdout).turn).toMatchObject({ status: 'interrupted', answer: null });
      // Cancelled, not waited out: the stand-in would answer after 8 s.
      expect(run.ms).toBeLessThan(7000);
      expect((await turns(mark)).map((t) => t.argv.at(-1))).toEqual([message]);
    }
    const recall = await cal(['continue', 'alder', 'What was the codeword?']);
    expect(recall.stdout.trim()).toBe('The codeword was ALDER.');
  });

  it('a first turn that fails after init keeps the conversation agy named, and the next turn resumes it', async () => {
    const work = await newWork();
    const failed = await start(work, 'Hello [[fake:fail]]', '--name', 'early');
    expect(failed.code).toBe(10);
    // A start whose first turn failed gives its name back (issue 20, item 4); the handle goes on by its id.
    const handle = /^handle: (\S+)$/m.exec(failed.stderr)?.[1] ?? failed.json?.error?.handle;
    expect((await cal(['inspect', 'early', '--json'])).code).toBe(3);
    const id = (await cal(['inspect', handle, '--json'])).json.provider.nativeSessionId;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const mark = await logLength();
    expect((await cal(['continue', handle, 'Hello again'])).code).toBe(0);
    expect((await turns(mark))[0].argv.slice(0, 4)).toEqual(['--output-format', 'stream-json', '--conversation', id]);
  });

  it('agy 1.0.0 (no --output-format) is refused before any handle exists (exit 16); --transport tmux, --system-prompt and --mcp-config are usage errors', async () => {
    const work = await newWork();
    const own = path.join(root, 'state-old');
    const from = await logLength();
    const old = await runCal(['--state-dir', own, 'start', '--provider', 'agy', '--cli-path', fakeCli.agy, '--cwd', work, 'Hello'], { env: { ...env, FAKE_AGY_VERSION: '1.0.0' } });
    expect(old.code).toBe(16);
    expect(old.stderr).toMatch(/^cal: cli_unsupported: agy 1\.0\.0 at .* lacks --output-format stream-json in its --help/m);
    expect((await readLog(log)).slice(from).map((c) => c.argv[0])).toEqual(['--version', '--help']);
    expect((await runCal(['--state-dir', own, 'inspect', '--json'], { env })).json.handles).toEqual([]);
    // 1.1.8 has stream-json and --conversation but neither --print-timeout nor --model: it runs, without them.
    const mid = await runCal(['--state-dir', own, 'start', '--provider', 'agy', '--cli-path', fakeCli.agy, '--cwd', work, 'Hello'], { env: { ...env, FAKE_AGY_VERSION: '1.1.8' } });
    expect(mid.code, mid.stderr).toBe(0);
    expect((await turns(from)).at(-1).argv).toEqual(['--output-format', 'stream-json', '--add-dir', work, '-p', 'Hello']);

    expect((await start(work, 'Hello', '--transport', 'tmux')).code).toBe(2);
    expect((await start(work, 'Hello', '--system-prompt', 'Be brief.')).json.error.message).toMatch(/agy has no option for a system prompt/);
    const mcp = path.join(root, 'mcp.json');
    await fs.writeFile(mcp, JSON.stringify({ mcpServers: {} }));
    expect((await start(work, 'Hello', '--mcp-config', mcp)).json.error.message).toMatch(/mcp_config\.json, which cal does not write/);
  });

  it('no secret of the environment in agy\'s argv, cal\'s output or the state directory', async () => {
    const work = await newWork();
    const from = await logLength();
    const runs = [await start(work, 'Remember the codeword SAFE.', '--name', 'safe'), await cal(['continue', 'safe', 'Hi [[fake:fail]]'])];
    for (const c of (await readLog(log)).slice(from)) expect(JSON.stringify(c)).not.toContain(SECRET);
    for (const r of runs) expect(r.stdout + r.stderr).not.toContain(SECRET);
    for (const { file, text } of await allFiles(state)) expect(text, file).not.toContain(SECRET);
  });

  it('certify: offline it says plainly that agy needs the real CLI and a sign-in (exit 8); --live runs the structured certification', async () => {
    const own = path.join(root, 'state-certify');
    const offline = await runCal(['--state-dir', own, 'certify', '--provider', 'agy', '--cli-path', fakeCli.agy], { env });
    expect(offline.code).toBe(8);
    expect(offline.stderr).toMatch(/^cal: non_applicable: agy cannot be certified here: agy has no base-URL override .* run: cal certify --provider agy --live$/m);
    const live = await runCal(['--state-dir', own, 'certify', '--provider', 'agy', '--cli-path', fakeCli.agy, '--live', '--json'], { env });
    expect(live.code, live.stdout + live.stderr).toBe(0);
    expect(live.json.results.filter((r: any) => r.result !== 'skip').map((r: any) => [r.id, r.result])).toEqual([['CertStructuredResume', 'pass']]);
  });
});
