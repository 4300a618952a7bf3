import { existsSync, realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsOf, handleFromStderr } from '../support/cal.js';
import { cliSuite, type CliSuite, freshGitRepo } from '../support/cli-suite.js';
import { pinnedCli, repoRoot } from '../support/clis.js';
import { listRollouts, readRollout } from '../support/codex-home.js';
import { sharedTmuxScenarios, TIMEOUT } from '../support/shared-scenarios.js';
import { until } from '../support/structured-fakes.js';

/**
 * Issue 4 acceptance: the real pinned Codex binary (0.169.0) in real tmux against the scripted
 * model, driven through the built `cal` as a black box. The tests of one describe build on each
 * other (one logical session), so they run in order. Each describe has its own HOME, CODEX_HOME
 * and state directory (so its own tmux server). The first scenarios are shared with Pi
 * (test/support/shared-scenarios.ts).
 */
describe('Codex in tmux, end to end', () => {
  let probeLog = '';
  let configToml = '';

  const session = sharedTmuxScenarios({
    provider: 'codex',
    prefix: 'codex-e2e',
    where: 'a fresh git repository (no trust prompt)',
    async prepare(suite) {
      const work = await freshGitRepo(path.join(suite.root, 'repo'));
      probeLog = path.join(suite.root, 'mcp-calls.jsonl');
      const mcpConfig = path.join(suite.root, 'mcp.json');
      const probe = path.join(repoRoot, 'test', 'support', 'codex-mcp-server.mjs');
      await fs.writeFile(mcpConfig, JSON.stringify({ mcpServers: { probe: { command: process.execPath, args: [probe], env: { MCP_PROBE_LOG: probeLog } } } }));
      configToml = await fs.readFile(path.join(suite.configDir, 'config.toml'), 'utf8');
      return { work, startArgs: ['--mcp-config', mcpConfig] };
    },
    nativeId: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    turnKey: /^[0-9a-f-]{36}$/,
    async checkStart(view, { suite, work }) {
      const id = view.provider.nativeSessionId as string;
      expect(view.provider.cli.realPath).toMatch(/vendor\/[^/]+\/bin\/codex$/);
      expect(view.provider.transcript.path).toBe(path.join(suite.configDir, 'sessions', ...view.provider.transcript.path.split(path.sep).slice(-4)));
      expect(path.basename(view.provider.transcript.path)).toMatch(new RegExp(`^rollout-.*-${id}\\.jsonl$`));
      const rollout = await readRollout(view.provider.transcript.path);
      expect(rollout[0]).toMatchObject({ type: 'session_meta', payload: { id, cwd: work, originator: 'codex-tui', cli_version: pinnedCli.codex.version } });
      // The user's config.toml was not rewritten by cal: every line is still there, and no cal setting.
      const toml = await fs.readFile(path.join(suite.configDir, 'config.toml'), 'utf8');
      for (const line of configToml.split('\n').filter(Boolean)) expect(toml).toContain(line);
      expect(toml).not.toMatch(/trust_level|resume_cwd|check_for_update/);
      // --no-daemon: no app-server daemon was installed or started.
      expect(existsSync(path.join(suite.configDir, 'packages', 'app-server-daemon'))).toBe(false);
    },
    transcripts: listRollouts,
    readTranscript: readRollout,
    headerType: 'session_meta',
  });
  const { cal, inspect } = session;

  it('a shell command turn and an MCP tool call turn are listed on their turn records; the answer is only the final message', async () => {
    const shell = await cal(['continue', session.handle, '--json', ...TIMEOUT, 'Run it [[cal:shell=echo hello-from-shell]]']);
    expect(shell.code).toBe(0);
    expect(shell.json.turn.answer).toBe('Tool finished: hello-from-shell');
    expect(shell.json.turn.tools).toEqual([{ kind: 'shell', name: 'echo hello-from-shell', output: 'hello-from-shell\n', status: 'completed' }]);

    const mcp = await cal(['continue', session.handle, '--json', ...TIMEOUT, 'Call it [[cal:mcp=probe.echo {"text":"ping-from-model"}]]']);
    expect(mcp.code).toBe(0);
    expect(mcp.json.turn.answer).toBe('Tool finished: echo: ping-from-model');
    expect(mcp.json.turn.tools).toEqual([{ kind: 'mcp', server: 'probe', name: 'echo', input: { text: 'ping-from-model' }, output: 'echo: ping-from-model', status: 'completed' }]);
    // The MCP server configured with --mcp-config really ran the call.
    expect((await fs.readFile(probeLog, 'utf8')).trim()).toBe(JSON.stringify({ name: 'echo', arguments: { text: 'ping-from-model' } }));
    // inspect shows them on the turns.
    const view = await inspect();
    expect(view.turns.at(-2).tools[0]).toMatchObject({ kind: 'shell', name: 'echo hello-from-shell' });
    expect(view.turns.at(-1).tools[0]).toMatchObject({ kind: 'mcp', server: 'probe', name: 'echo' });
  });

  it('one turn with a shell command and an MCP tool call lists both, in order; the answer is only the final message', async () => {
    const run = await cal(['continue', session.handle, '--json', ...TIMEOUT, 'Do both [[cal:shell=echo both-shell]] [[cal:mcp=probe.echo {"text":"both-mcp"}]]']);
    expect(run.code).toBe(0);
    expect(run.json.turn.answer).toBe('Tool finished: echo: both-mcp');
    expect(run.json.turn.tools).toEqual([
      { kind: 'shell', name: 'echo both-shell', output: 'both-shell\n', status: 'completed' },
      { kind: 'mcp', server: 'probe', name: 'echo', input: { text: 'both-mcp' }, output: 'echo: both-mcp', status: 'completed' },
    ]);
  });

  it('a 5 KB multi-line message with quotes, $(...), backticks, tabs and non-ASCII reaches Codex intact, pasted and in argv', async () => {
    const line = (i: number) => `line ${i}: "double" 'single' $(touch /tmp/cal-codex-pwned-${i}) \`uname\` \ttab ünïcødé ✓ 日本語 $HOME \\n`;
    let body = '';
    for (let i = 0; body.length < 5000; i++) body += line(i) + '\n';
    body = body.trimEnd();
    const userTexts = async () => {
      const view = await inspect();
      return (await readRollout(view.provider.transcript.path))
        .filter((r) => r.type === 'event_msg' && r.payload.type === 'item_completed' && r.payload.item.type === 'UserMessage')
        .map((r) => r.payload.item.content.map((c: { text?: string }) => c.text ?? '').join(''));
    };
    // Pasted into the live pane.
    const pasted = `[[cal:echo]] pasted\n${body}`;
    const run = await cal(['continue', session.handle, '--json', ...TIMEOUT, '-'], { input: pasted });
    expect(run.code).toBe(0);
    expect((await userTexts()).at(-1)).toBe(pasted);
    expect(run.json.turn.answer).toBe(`pasted\n${body}`);
    // In the argv of a resume launch.
    expect((await cal(['kill-tmux', session.handle])).code).toBe(0);
    const launched = `[[cal:echo]] launched\n${body}`;
    const resumed = await cal(['continue', session.handle, '--json', ...TIMEOUT, '-'], { input: launched });
    expect(resumed.code).toBe(0);
    expect((await userTexts()).at(-1)).toBe(launched);
    expect(resumed.json.turn.answer).toBe(`launched\n${body}`);
    expect(existsSync('/tmp/cal-codex-pwned-0')).toBe(false);
  });

  it('a message starting with "!" or "/" is text for the model, never a shell command or a slash command', async () => {
    const marker = path.join(session.work, 'codex-bang-ran');
    const bang = await cal(['continue', session.handle, '--json', ...TIMEOUT, `!touch ${marker}`]);
    expect(bang.code, bang.stdout).toBe(0);
    await expect(fs.stat(marker)).rejects.toThrow();
    const slash = await cal(['continue', session.handle, '--json', ...TIMEOUT, '/quit']);
    expect(slash.code, slash.stdout).toBe(0);
    expect((await inspect()).currentPaneAlive).toBe(true);
  });

  it('a scripted HTTP 500 is turn_failed (10) with Codex text and no answer; the session goes on', async () => {
    const run = await cal(['continue', session.handle, '--json', ...TIMEOUT, 'This one fails [[cal:http=500]]']);
    expect(run.code).toBe(10);
    expect(run.json.turn).toMatchObject({ status: 'failed', answer: null });
    expect(run.json.error.kind).toBe('turn_failed');
    expect(run.json.error.message).toContain('We’re currently experiencing high demand, which may cause temporary errors.');
    const plain = await cal(['continue', session.handle, ...TIMEOUT, 'Fails again [[cal:http=500]]']);
    expect(plain.code).toBe(10);
    expect(plain.stdout).toBe('');
    expect(plain.stderr).toMatch(/turn_failed: .*high demand/);
    const ok = await cal(['continue', session.handle, ...TIMEOUT, 'What was the codeword?']);
    expect(ok.code).toBe(0);
    expect(ok.stdout.trim()).toBe('The codeword was KIWI.');
  });

  it('tmux killed mid-turn: that turn ends lost (12), and the next continue resumes', async () => {
    const slow = cal(['continue', session.handle, '--json', ...TIMEOUT, 'Take your time [[cal:delay=15000]]']);
    await until(async () => {
      const view = await inspect();
      const turn = view?.turns?.at(-1);
      return turn?.message?.includes('Take your time') && turn.status === 'running';
    }, 'the slow turn to run');
    expect((await cal(['kill-tmux', session.handle])).code).toBe(0);
    const run = await slow;
    expect(run.code).toBe(12);
    expect(run.json.turn).toMatchObject({ status: 'lost', answer: null });
    expect(run.json.error.kind).toBe('lost');

    const next = await cal(['continue', session.handle, '--json', '--events', ...TIMEOUT, 'What was the codeword?']);
    expect(next.code).toBe(0);
    expect(next.json.turn.answer).toBe('The codeword was KIWI.');
    expect(eventsOf(next)).toEqual(['lost_tmux', 'resuming', 'running', 'completed']);
  });

  it('another Codex version earlier on PATH after start: continue still runs the pinned binary', async () => {
    const fakeBin = path.join(session.suite.root, 'other-codex', 'bin');
    const ran = path.join(session.suite.root, 'other-codex-ran');
    await fs.mkdir(fakeBin, { recursive: true });
    await fs.writeFile(
      path.join(fakeBin, 'codex'),
      `#!/bin/sh\nif [ "$1" = "--version" ]; then echo "codex-cli 0.170.0"; exit 0; fi\necho "$@" >> '${ran}'\nexit 1\n`,
      { mode: 0o755 },
    );
    const env = { ...session.suite.env, PATH: `${fakeBin}:${session.suite.env.PATH}` };
    expect((await execa('codex', ['--version'], { env, extendEnv: false })).stdout).toBe('codex-cli 0.170.0');

    expect((await cal(['kill-tmux', session.handle])).code).toBe(0);
    const run = await cal(['continue', session.handle, '--json', ...TIMEOUT, 'What was the codeword, once more?'], { env });
    expect(run.code).toBe(0);
    expect(run.json.turn.answer).toBe('The codeword was KIWI.');
    expect(existsSync(ran)).toBe(false);

    const view = await inspect();
    expect(view.provider.cli.version).toBe(pinnedCli.codex.version);
    // The pane's process is the pinned native binary…
    const pid = (await execa('tmux', ['-S', view.provider.tmux.socket, 'display-message', '-p', '-t', view.provider.tmux.paneId, '#{pane_pid}'])).stdout.trim();
    expect(realpathSync(`/proc/${pid}/exe`)).toBe(view.provider.cli.realPath);
    // …and the rollout it appended to records the pinned version.
    const rollout = await readRollout(view.provider.transcript.path);
    expect(rollout[0].payload.cli_version).toBe(pinnedCli.codex.version);
    expect(rollout.filter((r) => r.type === 'session_meta')).toHaveLength(1);
  });
});

describe('Codex through a symlinked working directory', () => {
  let s: CliSuite;

  beforeAll(async () => {
    s = await cliSuite('codex', { prefix: 'codex-symlink' });
  });

  afterAll(async () => {
    await s?.close();
  });

  it('no trust prompt blocks a fresh git repository reached through a symlink, at start or on resume', async () => {
    const repo = await freshGitRepo(path.join(s.root, 'real', 'repo'));
    const link = path.join(s.root, 'link-to-repo');
    await fs.symlink(repo, link);
    const cal = (args: string[]) => s.cal(args);

    const start = await cal(['start', '--provider', 'codex', '--cwd', link, ...TIMEOUT, 'Remember the codeword FIG.']);
    expect(start.code).toBe(0);
    expect(start.stdout.trim()).toBe('OK, I will remember the codeword FIG.');
    const handle = handleFromStderr(start.stderr) ?? '';
    const view = (await cal(['inspect', handle, '--json'])).json;
    expect(view.config.workingDir).toMatchObject({ path: link, realPath: repo });
    expect((await readRollout(view.provider.transcript.path))[0].payload.cwd).toBe(repo);

    expect((await cal(['kill-tmux', handle])).code).toBe(0);
    // The same folder spelled by its real path is the same folder.
    const next = await cal(['continue', handle, '--cwd', repo, ...TIMEOUT, 'What was the codeword?']);
    expect(next.code).toBe(0);
    expect(next.stdout.trim()).toBe('The codeword was FIG.');

    // Codex refusing the resume (its rollout is gone) is resume_unavailable with Codex's own words.
    expect((await cal(['kill-tmux', handle])).code).toBe(0);
    await fs.rename(path.join(s.configDir, 'sessions'), path.join(s.configDir, 'sessions-moved'));
    const refused = await cal(['continue', handle, '--json', ...TIMEOUT, 'Are you there?']);
    expect(refused.code).toBe(9);
    expect(refused.json.error.kind).toBe('resume_unavailable');
    expect(refused.json.error.message).toMatch(/Error: Failed to resume session/);
    expect(refused.json.error.message).not.toMatch(/<unknown>/);
  });
});

describe('Codex sessions started at the same time', () => {
  let s: CliSuite;

  beforeAll(async () => {
    s = await cliSuite('codex', { prefix: 'codex-concurrent' });
  });

  afterAll(async () => {
    await s?.close();
  });

  it('three starts with the same first message in the same folder each bind their own rollout', async () => {
    const work = await freshGitRepo(path.join(s.root, 'repo'));
    const cal = (args: string[]) => s.cal(args);
    const runs = await Promise.all([1, 2, 3].map(() => cal(['start', '--provider', 'codex', '--cwd', work, '--json', ...TIMEOUT, 'Remember the codeword TWIN.'])));
    for (const run of runs) expect(run.json?.turn?.status, run.stdout + run.stderr).toBe('completed');
    const views = await Promise.all(runs.map(async (run) => (await cal(['inspect', run.json.handle, '--json'])).json));
    const ids = views.map((v) => v.provider.nativeSessionId);
    expect(new Set(ids).size).toBe(3);
    const rollouts = await listRollouts(s.configDir);
    expect(rollouts).toHaveLength(3);
    expect(new Set(views.map((v) => v.provider.transcript.path))).toEqual(new Set(rollouts));
    // Each pane's own process holds the rollout its handle was bound to.
    for (const view of views) {
      const pid = (await execa('tmux', ['-S', view.provider.tmux.socket, 'display-message', '-p', '-t', view.provider.tmux.paneId, '#{pane_pid}'])).stdout.trim();
      const held = await Promise.all((await fs.readdir(`/proc/${pid}/fd`)).map((fd) => fs.readlink(`/proc/${pid}/fd/${fd}`).catch(() => '')));
      expect(held).toContain(view.provider.transcript.path);
    }
  });
});
