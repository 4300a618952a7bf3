import { existsSync, realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkCliNode } from '../../src/adapters/resolve.js';
import { baseEnv, runCal, scratchDir } from '../support/cal.js';
import { cliSuite, pinnedVersion, type CliSuite, type SuiteProvider } from '../support/cli-suite.js';
import { calBin, cliBin, repoRoot } from '../support/clis.js';
import { removeScratch } from '../support/scratch.js';

/**
 * The ACP transport (issue 53): the real pinned Gemini CLI, Qwen Code and OpenCode run as ACP
 * agents (`gemini --acp`, `qwen --acp`, `opencode acp`) against the scripted model, through the
 * built `cal`; and `--provider acp` with a command line, on Gemini CLI and on a minimal agent of
 * the tests' own (test/support/acp-agent.mjs) for what a real CLI cannot be made to do on cue
 * (no session/load, a permission request, a prompt that waits for its cancel).
 */
const TIMEOUT = ['--timeout', '150'];
const KIWI = 'Remember the codeword KIWI.';
const ASK = 'What was the codeword?';

const qwenNodeTooOld = await checkCliNode(realpathSync(cliBin('qwen')), { PATH: process.env.PATH ?? '' }).then(
  () => null,
  (e: unknown) => (e instanceof Error ? e.message : String(e)),
);
if (qwenNodeTooOld) console.warn(`qwen skipped: ${qwenNodeTooOld}`);

/** start, then continue: the recall, the first message once in the model's request, the handle on ACP. */
async function startAndRecall(suite: CliSuite, start: string[]): Promise<string> {
  const run = await suite.cal(['start', ...start, '--cwd', suite.work, '--json', ...TIMEOUT, KIWI]);
  expect(run.code, run.stderr).toBe(0);
  expect(run.json.turn).toMatchObject({ status: 'completed', answer: 'OK, I will remember the codeword KIWI.' });
  const handle = run.json.handle as string;
  const view = await suite.inspect(handle);
  expect(view.provider).toMatchObject({ transport: 'acp', tmux: null, pendingSessionId: null });
  expect(view.provider.nativeSessionId).toEqual(expect.any(String));
  // Right after the first turn, in the same minute as a rule (Gemini's load quirk: gemini-load.ts).
  suite.server.clearLog();
  const next = await suite.cal(['continue', handle, '--json', ...TIMEOUT, ASK]);
  expect(next.code, next.stderr).toBe(0);
  expect(next.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was KIWI.' });
  const turns = suite.server.turnRequests();
  expect(turns).toHaveLength(1);
  expect(turns[0]!.userMessages).toEqual([KIWI, ASK]);
  expect((await suite.inspect(handle)).provider.nativeSessionId).toBe(view.provider.nativeSessionId);
  return handle;
}

const clis: { provider: SuiteProvider; skip: boolean }[] = [
  { provider: 'gemini', skip: false },
  { provider: 'qwen', skip: qwenNodeTooOld !== null },
  { provider: 'opencode', skip: false },
  { provider: 'kilo', skip: false },
];

for (const { provider, skip } of clis) {
  describe.skipIf(skip)(`${provider} over --transport acp, end to end`, () => {
    let suite: CliSuite;
    beforeAll(async () => {
      suite = await cliSuite(provider, { prefix: `acp-${provider}` });
    });
    afterAll(async () => {
      await suite?.close();
    });

    it('start and continue recall the codeword; the model gets the first message once; the pinned CLI is recorded', async () => {
      const handle = await startAndRecall(suite, ['--provider', provider, '--transport', 'acp']);
      expect((await suite.inspect(handle)).provider.cli.version).toBe(pinnedVersion(provider));
      // The agent's own commands ("/memory", "/init"; Gemini's "$") reach the model as text: the ACP guard.
      for (const command of ['/init', '/memory show', '$ about']) {
        suite.server.clearLog();
        const run = await suite.cal(['continue', handle, '--json', ...TIMEOUT, '-'], { input: command });
        expect(run.code, `${command}: ${run.stderr}`).toBe(0);
        expect(suite.server.turnRequests().map((r) => r.lastUserMessage?.replace(/\u200b/g, '')), command).toContain(command);
      }
    });
  });
}

describe('Gemini CLI over ACP: tools, --stream, and --provider acp with its command line', () => {
  let suite: CliSuite;
  beforeAll(async () => {
    suite = await cliSuite('gemini', { prefix: 'acp-gemini-more' });
  });
  afterAll(async () => {
    await suite?.close();
  });

  it('a shell tool call is reported from tool_call/tool_call_update, and --stream prints the turn as it comes', async () => {
    const run = await suite.cal(['start', '--provider', 'gemini', '--transport', 'acp', '--cwd', suite.work, '--stream', '--json', ...TIMEOUT, 'Run it [[cal:shell=echo ACP-OUT]]']);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trim().split('\n').map((l) => JSON.parse(l));
    const final = lines.at(-1);
    expect(final.turn.status).toBe('completed');
    expect(final.turn.answer).toContain('ACP-OUT');
    expect(final.turn.tools).toEqual([expect.objectContaining({ kind: 'shell', name: 'echo ACP-OUT', status: 'completed' })]);
    const streamed = lines.slice(0, -1);
    expect(streamed[0]).toEqual({ type: 'tool', phase: 'call', kind: 'shell', name: 'echo ACP-OUT' });
    expect(streamed.filter((e) => e.type === 'text').map((e) => e.text).join('')).toBe(final.turn.answer);
  });

  it('--provider acp --acp-command "gemini --acp": start, continue and recall; another command on continue is stale_handle', async () => {
    const handle = await startAndRecall(suite, ['--provider', 'acp', '--acp-command', 'gemini --acp']);
    const view = await suite.inspect(handle);
    expect(view.provider).toMatchObject({ provider: 'acp', cli: { version: pinnedVersion('gemini'), args: ['--acp'] } });
    const other = await suite.cal(['continue', handle, '--acp-command', 'gemini --experimental-acp', ASK]);
    expect(other.code).toBe(6);
    expect(other.stderr).toMatch(/stale_handle: the session runs the ACP agent ".*gemini\.js --acp", not ".*--experimental-acp"/);
  });
});

describe('--provider acp with a minimal agent of the tests', () => {
  let root: string;
  let env: Record<string, string>;
  let work: string;
  const agent = path.join(repoRoot, 'test', 'support', 'acp-agent.mjs');
  const cal = (args: string[]) => runCal(['--state-dir', path.join(root, 'state'), ...args], { env });

  beforeAll(async () => {
    root = realpathSync(await scratchDir('acp-agent'));
    work = path.join(root, 'work');
    await fs.mkdir(work);
    env = baseEnv({ HOME: root, ACP_AGENT_STORE: path.join(root, 'agent-store.json') });
  });
  afterAll(async () => {
    await removeScratch(root);
  });

  it('a resume the agent does not advertise (loadSession false) is non_continuable, and nothing is sent', async () => {
    const start = await cal(['start', '--provider', 'acp', '--acp-command', `node ${agent} --no-load`, '--cwd', work, '--json', 'hello']);
    expect(start.code, start.stderr).toBe(0);
    expect((start.json as any).turn.answer).toBe('echo: hello');
    const next = await cal(['continue', (start.json as any).handle, 'again']);
    expect(next.code).toBe(7);
    expect(next.stderr).toMatch(/non_continuable: the ACP agent does not advertise session\/load/);
    const store = JSON.parse(await fs.readFile(env.ACP_AGENT_STORE!, 'utf8'));
    expect(store.s1).toEqual([['hello', 'echo: hello']]);
  });

  it('hostile messages reach the agent whole, as the prompt\'s text (no pane to guard, nothing read as a flag or a command)', async () => {
    // The messages of test/e2e/hostile-messages.test.ts and test/unit/structured-message-delivery.test.ts,
    // on stdin as a script sends them; the agent records each prompt it gets.
    const hostile = ['!touch MARK', ' /exit', '-v --help', '--version', '@notes.txt', 'exit', '&x', '?', '#x', '$', '-- -p x', 'hello\u001b[201~\r!touch MARK\r'];
    const mark = path.join(root, 'pwned');
    const start = await runCal(['--state-dir', path.join(root, 'state'), 'start', '--provider', 'acp', '--acp-command', `node ${agent}`, '--cwd', work, '--json', '-'], { env, input: 'hostile first' });
    expect(start.code, start.stderr).toBe(0);
    const handle = (start.json as any).handle as string;
    // Whole, byte for byte, behind the ACP guard: a zero-width space before a first visible "/"
    // or "$" (an agent's command), nothing before anything else.
    const asSent = (message: string) => (/^\s*[/$]/.test(message) ? `\u200b${message}` : message);
    for (const template of hostile) {
      const message = template.replace('MARK', mark);
      const run = await runCal(['--state-dir', path.join(root, 'state'), 'continue', handle, '--json', '-'], { env, input: message });
      expect(run.code, `${JSON.stringify(message)}: ${run.stderr}`).toBe(0);
      expect((run.json as any).turn.answer).toBe(`echo: ${asSent(message)}`);
    }
    const store = JSON.parse(await fs.readFile(env.ACP_AGENT_STORE!, 'utf8')) as Record<string, [string, string][]>;
    const prompts = Object.values(store).find((turns) => turns[0]?.[0] === 'hostile first')!.map(([prompt]) => prompt);
    expect(prompts).toEqual(['hostile first', ...hostile.map((t) => asSent(t.replace('MARK', mark)))]);
    expect(prompts.filter((p) => p.startsWith('\u200b'))).toHaveLength(2);
    expect(existsSync(mark)).toBe(false);
  });

  it("session/load's replay is history: the answer is the new turn's text only", async () => {
    const start = await cal(['start', '--provider', 'acp', '--acp-command', `node ${agent}`, '--cwd', work, '--json', 'first']);
    expect(start.code, start.stderr).toBe(0);
    const next = await cal(['continue', (start.json as any).handle, '--json', 'second']);
    expect(next.code, next.stderr).toBe(0);
    expect((next.json as any).turn.answer).toBe('echo: second');
  });

  it('permission requests are answered by the tool policy: default rejects, bypass allows', async () => {
    const rejected = await cal(['start', '--provider', 'acp', '--acp-command', `node ${agent}`, '--cwd', work, '--json', 'PERMIT']);
    expect((rejected.json as any).turn).toMatchObject({ answer: 'permission: no', tools: [{ kind: 'shell', name: 'rm -rf build', status: 'failed', output: 'permission: no' }] });
    const allowed = await cal(['start', '--provider', 'acp', '--acp-command', `node ${agent}`, '--tool-policy', 'bypass', '--cwd', work, '--json', 'PERMIT']);
    expect((allowed.json as any).turn.answer).toBe('permission: yes');
  });

  it('Ctrl-C during the prompt is session/cancel: the turn ends interrupted on the agent\'s own stopReason', async () => {
    const child = execa('node', [calBin, '--state-dir', path.join(root, 'state'), 'start', '--provider', 'acp', '--acp-command', `node ${agent}`, '--cwd', work, '--stream', '--json', 'HANG'], { env, extendEnv: false, reject: false, stdin: 'ignore' });
    child.stdout!.setEncoding('utf8');
    await new Promise<void>((resolve) => child.stdout!.on('data', (d: string) => d.includes('working') && resolve()));
    child.kill('SIGINT');
    const res = await child;
    const final = JSON.parse(String(res.stdout).trim().split('\n').at(-1)!);
    expect(final.turn).toMatchObject({ status: 'interrupted', error: { kind: 'interrupted', message: 'cancelled by the caller' } });
    // The agent got session/cancel and ended its prompt itself (it records that), rather than being killed.
    const store = JSON.parse(await fs.readFile(env.ACP_AGENT_STORE!, 'utf8'));
    expect(Object.values(store)).toContainEqual([['HANG', 'session/cancel']]);
  });
});
