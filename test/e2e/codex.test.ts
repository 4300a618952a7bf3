import { existsSync, realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { baseEnv, handleFromStderr, killStateTmux, runCal, scratchDir, type CalRun } from '../support/cal.js';
import { cliBin, pinnedCli, repoRoot } from '../support/clis.js';
import { codexTestEnv, listRollouts, readRollout } from '../support/codex-home.js';

/**
 * Issue 4 acceptance: the real pinned Codex binary (0.169.0) in real tmux against the scripted
 * model, driven through the built `cal` as a black box. The tests of one describe build on each
 * other (one logical session), so they run in order. Each describe has its own HOME, CODEX_HOME
 * and state directory (so its own tmux server).
 */
const TIMEOUT = ['--timeout', '60'];

async function freshGitRepo(dir: string): Promise<string> {
  await fs.mkdir(dir, { recursive: true });
  await execa('git', ['init', '-q', dir]);
  return realpathSync(dir);
}

function eventsOf(run: CalRun): string[] {
  return run.stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l).event);
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

interface Suite {
  server: ModelServer;
  root: string;
  state: string;
  env: Record<string, string>;
  codexHome: string;
  configToml: string;
}

async function suite(name: string, server: ModelServer): Promise<Suite> {
  const root = realpathSync(await scratchDir(name));
  const state = path.join(root, 'state');
  // The pinned CLIs of this repository are what `codex` on PATH finds.
  const base = baseEnv({ PATH: `${path.dirname(cliBin('codex'))}:${process.env.PATH ?? '/usr/bin:/bin'}` });
  const { env, codexHome, configToml } = await codexTestEnv(root, server.url, base);
  return { server, root, state, env, codexHome, configToml };
}

describe('Codex in tmux, end to end', () => {
  let server: ModelServer;
  let s: Suite;
  let work: string;
  let mcpConfig: string;
  let probeLog: string;
  let handle = '';

  const cal = (args: string[], env?: Record<string, string>) => runCal(['--state-dir', s.state, ...args], { env: env ?? s.env });
  const inspect = async () => (await cal(['inspect', handle, '--json'])).json;

  beforeAll(async () => {
    server = await startModelServer({});
    s = await suite('codex-e2e', server);
    work = await freshGitRepo(path.join(s.root, 'repo'));
    probeLog = path.join(s.root, 'mcp-calls.jsonl');
    mcpConfig = path.join(s.root, 'mcp.json');
    const probe = path.join(repoRoot, 'test', 'support', 'codex-mcp-server.mjs');
    await fs.writeFile(mcpConfig, JSON.stringify({ mcpServers: { probe: { command: process.execPath, args: [probe], env: { MCP_PROBE_LOG: probeLog } } } }));
  });

  afterAll(async () => {
    if (s) await killStateTmux(s.state);
    await server?.close();
  });

  it('starts in a fresh git repository (no trust prompt) and remembers; the handle pins the native binary', async () => {
    const run = await cal(['start', '--provider', 'codex', '--cwd', work, '--mcp-config', mcpConfig, ...TIMEOUT, 'Remember the codeword KIWI.']);
    expect(run.stderr).toMatch(/^handle: [a-z0-9]+$/m);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe('OK, I will remember the codeword KIWI.');
    handle = handleFromStderr(run.stderr) ?? '';

    const view = await inspect();
    const id = view.provider.nativeSessionId as string;
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(view.provider.tmux.paneId).toMatch(/^%\d+$/);
    expect(view.currentPaneAlive).toBe(true);
    expect(view.provider.cli.version).toBe(pinnedCli.codex.version);
    expect(view.provider.cli.realPath).toMatch(/vendor\/[^/]+\/bin\/codex$/);
    expect(view.provider.transcript.path).toBe(path.join(s.codexHome, 'sessions', ...view.provider.transcript.path.split(path.sep).slice(-4)));
    expect(path.basename(view.provider.transcript.path)).toMatch(new RegExp(`^rollout-.*-${id}\\.jsonl$`));
    const rollout = await readRollout(view.provider.transcript.path);
    expect(rollout[0]).toMatchObject({ type: 'session_meta', payload: { id, cwd: work, originator: 'codex-tui', cli_version: pinnedCli.codex.version } });
    expect(view.turns.at(-1).turnKey).toMatch(/^[0-9a-f-]{36}$/);

    // The user's config.toml was not rewritten by cal: every line is still there, and no cal setting.
    const toml = await fs.readFile(path.join(s.codexHome, 'config.toml'), 'utf8');
    for (const line of s.configToml.split('\n').filter(Boolean)) expect(toml).toContain(line);
    expect(toml).not.toMatch(/trust_level|resume_cwd|check_for_update/);
    // --no-daemon: no app-server daemon was installed or started.
    expect(existsSync(path.join(s.codexHome, 'packages', 'app-server-daemon'))).toBe(false);
  });

  it('continue with the pane alive pastes into it (no relaunch) and recalls', async () => {
    const before = await inspect();
    const run = await cal(['continue', handle, '--json', '--events', ...TIMEOUT, 'What was the codeword?']);
    expect(run.code).toBe(0);
    expect(run.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was KIWI.' });
    expect(eventsOf(run)).toEqual(['running', 'completed']);
    const after = await inspect();
    expect(after.panes).toHaveLength(1);
    expect(after.provider.tmux.paneId).toBe(before.provider.tmux.paneId);
    expect(after.provider.transcript.offset).toBeGreaterThan(before.provider.transcript.offset);
  });

  it('after kill-tmux, continue resumes natively: one new user message, the same rollout appended, the old pane archived', async () => {
    const before = await inspect();
    const sizeBefore = (await fs.stat(before.provider.transcript.path)).size;
    expect((await cal(['kill-tmux', handle])).code).toBe(0);
    server.clearLog();
    const run = await cal(['continue', handle, '--json', '--events', ...TIMEOUT, 'What was the codeword, again?']);
    expect(run.code).toBe(0);
    expect(run.json.turn.answer).toBe('The codeword was KIWI.');
    expect(eventsOf(run)).toEqual(['lost_tmux', 'resuming', 'running', 'completed']);

    const after = await inspect();
    expect(after.panes).toHaveLength(2);
    expect(after.panes[0]).toMatchObject({ launch: 'resume', endedAt: null });
    expect(after.panes[1].tmux.session).toBe(before.provider.tmux.session);
    expect(after.panes[1].endedAt).not.toBeNull();
    expect(after.provider.nativeSessionId).toBe(before.provider.nativeSessionId);
    expect(after.provider.transcript.path).toBe(before.provider.transcript.path);
    expect((await fs.stat(after.provider.transcript.path)).size).toBeGreaterThan(sizeBefore);
    expect(await listRollouts(s.codexHome)).toEqual([after.provider.transcript.path]);
    const rollout = await readRollout(after.provider.transcript.path);
    expect(rollout.filter((r) => r.type === 'session_meta')).toHaveLength(1);

    // The resumed request carried each earlier turn once and exactly one new message.
    const last = server.turnRequests().at(-1)!;
    expect(last.userMessages).toEqual(['Remember the codeword KIWI.', 'What was the codeword?', 'What was the codeword, again?']);
  });

  it('a shell command turn and an MCP tool call turn are listed on their turn records; the answer is only the final message', async () => {
    const shell = await cal(['continue', handle, '--json', ...TIMEOUT, 'Run it [[cal:shell=echo hello-from-shell]]']);
    expect(shell.code).toBe(0);
    expect(shell.json.turn.answer).toBe('Tool finished: hello-from-shell');
    expect(shell.json.turn.tools).toEqual([{ kind: 'shell', name: 'echo hello-from-shell', output: 'hello-from-shell\n', status: 'completed' }]);

    const mcp = await cal(['continue', handle, '--json', ...TIMEOUT, 'Call it [[cal:mcp=probe.echo {"text":"ping-from-model"}]]']);
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
    const run = await cal(['continue', handle, '--json', ...TIMEOUT, 'Do both [[cal:shell=echo both-shell]] [[cal:mcp=probe.echo {"text":"both-mcp"}]]']);
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
    const run = await runCal(['--state-dir', s.state, 'continue', handle, '--json', ...TIMEOUT, '-'], { env: s.env, input: pasted });
    expect(run.code).toBe(0);
    expect((await userTexts()).at(-1)).toBe(pasted);
    expect(run.json.turn.answer).toBe(`pasted\n${body}`);
    // In the argv of a resume launch.
    expect((await cal(['kill-tmux', handle])).code).toBe(0);
    const launched = `[[cal:echo]] launched\n${body}`;
    const resumed = await runCal(['--state-dir', s.state, 'continue', handle, '--json', ...TIMEOUT, '-'], { env: s.env, input: launched });
    expect(resumed.code).toBe(0);
    expect((await userTexts()).at(-1)).toBe(launched);
    expect(resumed.json.turn.answer).toBe(`launched\n${body}`);
    expect(existsSync('/tmp/cal-codex-pwned-0')).toBe(false);
  });

  it('a message starting with "!" or "/" is text for the model, never a shell command or a slash command', async () => {
    const marker = path.join(work, 'codex-bang-ran');
    const bang = await cal(['continue', handle, '--json', ...TIMEOUT, `!touch ${marker}`]);
    expect(bang.code, bang.stdout).toBe(0);
    await expect(fs.stat(marker)).rejects.toThrow();
    const slash = await cal(['continue', handle, '--json', ...TIMEOUT, '/quit']);
    expect(slash.code, slash.stdout).toBe(0);
    expect((await inspect()).currentPaneAlive).toBe(true);
  });

  it('a scripted HTTP 500 is turn_failed (10) with Codex text and no answer; the session goes on', async () => {
    const run = await cal(['continue', handle, '--json', ...TIMEOUT, 'This one fails [[cal:http=500]]']);
    expect(run.code).toBe(10);
    expect(run.json.turn).toMatchObject({ status: 'failed', answer: null });
    expect(run.json.error.kind).toBe('turn_failed');
    expect(run.json.error.message).toContain('We’re currently experiencing high demand, which may cause temporary errors.');
    const plain = await cal(['continue', handle, ...TIMEOUT, 'Fails again [[cal:http=500]]']);
    expect(plain.code).toBe(10);
    expect(plain.stdout).toBe('');
    expect(plain.stderr).toMatch(/turn_failed: .*high demand/);
    const ok = await cal(['continue', handle, ...TIMEOUT, 'What was the codeword?']);
    expect(ok.code).toBe(0);
    expect(ok.stdout.trim()).toBe('The codeword was KIWI.');
  });

  it('tmux killed mid-turn: that turn ends lost (12), and the next continue resumes', async () => {
    const slow = cal(['continue', handle, '--json', ...TIMEOUT, 'Take your time [[cal:delay=15000]]']);
    await waitFor('the slow turn to run', async () => {
      const view = await inspect();
      const turn = view?.turns?.at(-1);
      return turn?.message?.includes('Take your time') && turn.status === 'running';
    });
    expect((await cal(['kill-tmux', handle])).code).toBe(0);
    const run = await slow;
    expect(run.code).toBe(12);
    expect(run.json.turn).toMatchObject({ status: 'lost', answer: null });
    expect(run.json.error.kind).toBe('lost');

    const next = await cal(['continue', handle, '--json', '--events', ...TIMEOUT, 'What was the codeword?']);
    expect(next.code).toBe(0);
    expect(next.json.turn.answer).toBe('The codeword was KIWI.');
    expect(eventsOf(next)).toEqual(['lost_tmux', 'resuming', 'running', 'completed']);
  });

  it('another Codex version earlier on PATH after start: continue still runs the pinned binary', async () => {
    const fakeBin = path.join(s.root, 'other-codex', 'bin');
    const ran = path.join(s.root, 'other-codex-ran');
    await fs.mkdir(fakeBin, { recursive: true });
    await fs.writeFile(
      path.join(fakeBin, 'codex'),
      `#!/bin/sh\nif [ "$1" = "--version" ]; then echo "codex-cli 0.170.0"; exit 0; fi\necho "$@" >> '${ran}'\nexit 1\n`,
      { mode: 0o755 },
    );
    const env = { ...s.env, PATH: `${fakeBin}:${s.env.PATH}` };
    expect((await execa('codex', ['--version'], { env, extendEnv: false })).stdout).toBe('codex-cli 0.170.0');

    expect((await cal(['kill-tmux', handle])).code).toBe(0);
    const run = await cal(['continue', handle, '--json', ...TIMEOUT, 'What was the codeword, once more?'], env);
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

describe('Codex with --transport structured, end to end', () => {
  let server: ModelServer;
  let s: Suite;
  let work: string;
  let handle = '';

  const cal = (args: string[]) => runCal(['--state-dir', s.state, ...args], { env: s.env });
  const inspect = async () => (await cal(['inspect', handle, '--json'])).json;

  beforeAll(async () => {
    server = await startModelServer({});
    s = await suite('codex-structured', server);
    work = await freshGitRepo(path.join(s.root, 'repo'));
  });

  afterAll(async () => {
    if (s) await killStateTmux(s.state);
    await server?.close();
  });

  it('start remembers through codex exec --json; the handle has the thread id and its rollout, no pane', async () => {
    const run = await cal(['start', '--provider', 'codex', '--transport', 'structured', '--cwd', work, ...TIMEOUT, 'Remember the codeword PEAR.']);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe('OK, I will remember the codeword PEAR.');
    handle = handleFromStderr(run.stderr) ?? '';
    const view = await inspect();
    expect(view.provider.transport).toBe('structured');
    expect(view.provider.nativeSessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(view.provider.tmux).toBeNull();
    expect(view.panes).toEqual([]);
    expect(view.provider.cli.realPath).toMatch(/vendor\/[^/]+\/bin\/codex$/);
    expect(path.basename(view.provider.transcript.path)).toContain(view.provider.nativeSessionId);
    const rollout = await readRollout(view.provider.transcript.path);
    expect(rollout[0].payload).toMatchObject({ originator: 'codex_exec', cwd: work, cli_version: pinnedCli.codex.version });
  });

  it('continue resumes with codex exec resume and recalls', async () => {
    const run = await cal(['continue', handle, '--json', '--events', ...TIMEOUT, 'What was the codeword?']);
    expect(run.code).toBe(0);
    expect(run.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was PEAR.' });
    expect(eventsOf(run)).toEqual(['resuming', 'running', 'completed']);
  });

  it('kill-tmux has no pane to kill (non_applicable, as for an API session); continue still resumes with only the new message on the same rollout', async () => {
    const before = await inspect();
    const kill = await cal(['kill-tmux', handle, '--json']);
    expect(kill.code).toBe(8);
    expect(kill.json.error.kind).toBe('non_applicable');
    server.clearLog();
    const run = await cal(['continue', handle, '--json', ...TIMEOUT, 'What was the codeword, again?']);
    expect(run.code).toBe(0);
    expect(run.json.turn.answer).toBe('The codeword was PEAR.');
    const after = await inspect();
    expect(after.provider.nativeSessionId).toBe(before.provider.nativeSessionId);
    expect(after.provider.transcript.path).toBe(before.provider.transcript.path);
    expect(await listRollouts(s.codexHome)).toEqual([after.provider.transcript.path]);
    expect((await readRollout(after.provider.transcript.path)).filter((r) => r.type === 'session_meta')).toHaveLength(1);
    const turns = server.turnRequests();
    expect(turns).toHaveLength(1);
    expect(turns[0]!.userMessages).toEqual(['Remember the codeword PEAR.', 'What was the codeword?', 'What was the codeword, again?']);
  });

  it('tool activity and a scripted HTTP 500 come from the event stream', async () => {
    const shell = await cal(['continue', handle, '--json', ...TIMEOUT, 'Run it [[cal:shell=echo hello-from-exec]]']);
    expect(shell.code).toBe(0);
    expect(shell.json.turn.answer).toBe('Tool finished: hello-from-exec');
    expect(shell.json.turn.tools).toEqual([{ kind: 'shell', name: 'echo hello-from-exec', output: 'hello-from-exec\n', status: 'completed' }]);
    const failed = await cal(['continue', handle, '--json', ...TIMEOUT, 'This one fails [[cal:http=500]]']);
    expect(failed.code).toBe(10);
    expect(failed.json.turn).toMatchObject({ status: 'failed', answer: null });
    expect(failed.json.error.message).toContain('We’re currently experiencing high demand');
  });

  it('when the pinned binary is gone, continue is cli_missing (13) naming the pinned version', async (ctx) => {
    const view = await inspect();
    const copy = path.join(s.root, 'pinned', 'codex');
    await fs.mkdir(path.dirname(copy), { recursive: true });
    try {
      await fs.link(view.provider.cli.realPath, copy); // a hard link: no 300 MB copy
    } catch {
      ctx.skip();
    }
    const start = await cal(['start', '--provider', 'codex', '--transport', 'structured', '--cwd', work, '--cli-path', copy, ...TIMEOUT, 'Remember the codeword LIME.']);
    expect(start.code).toBe(0);
    const other = handleFromStderr(start.stderr) ?? '';
    expect((await cal(['inspect', other, '--json'])).json.provider.cli).toMatchObject({ realPath: copy, version: pinnedCli.codex.version });
    await fs.rm(copy);
    const run = await cal(['continue', other, '--json', ...TIMEOUT, 'What was the codeword?']);
    expect(run.code).toBe(13);
    expect(run.json.error.kind).toBe('cli_missing');
    expect(run.json.error.message).toContain(pinnedCli.codex.version);
  });

  it('codex exec refusing the resume (rollout gone) is resume_unavailable (9) with its own words', async () => {
    await fs.rename(path.join(s.codexHome, 'sessions'), path.join(s.codexHome, 'sessions-moved'));
    const run = await cal(['continue', handle, '--json', ...TIMEOUT, 'Are you there?']);
    expect(run.code).toBe(9);
    expect(run.json.error.kind).toBe('resume_unavailable');
    expect(run.json.error.message).toMatch(/no rollout found for thread id/);
    expect(run.json.error.message).not.toMatch(/<unknown>/);
  });
});

describe('Codex through a symlinked working directory', () => {
  let server: ModelServer;
  let s: Suite;

  beforeAll(async () => {
    server = await startModelServer({});
    s = await suite('codex-symlink', server);
  });

  afterAll(async () => {
    if (s) await killStateTmux(s.state);
    await server?.close();
  });

  it('no trust prompt blocks a fresh git repository reached through a symlink, at start or on resume', async () => {
    const repo = await freshGitRepo(path.join(s.root, 'real', 'repo'));
    const link = path.join(s.root, 'link-to-repo');
    await fs.symlink(repo, link);
    const cal = (args: string[]) => runCal(['--state-dir', s.state, ...args], { env: s.env });

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
    await fs.rename(path.join(s.codexHome, 'sessions'), path.join(s.codexHome, 'sessions-moved'));
    const refused = await cal(['continue', handle, '--json', ...TIMEOUT, 'Are you there?']);
    expect(refused.code).toBe(9);
    expect(refused.json.error.kind).toBe('resume_unavailable');
    expect(refused.json.error.message).toMatch(/Error: Failed to resume session/);
    expect(refused.json.error.message).not.toMatch(/<unknown>/);
  });
});

describe('Codex sessions started at the same time', () => {
  let server: ModelServer;
  let s: Suite;

  beforeAll(async () => {
    server = await startModelServer({});
    s = await suite('codex-concurrent', server);
  });

  afterAll(async () => {
    if (s) await killStateTmux(s.state);
    await server?.close();
  });

  it('three starts with the same first message in the same folder each bind their own rollout', async () => {
    const work = await freshGitRepo(path.join(s.root, 'repo'));
    const cal = (args: string[]) => runCal(['--state-dir', s.state, ...args], { env: s.env });
    const runs = await Promise.all([1, 2, 3].map(() => cal(['start', '--provider', 'codex', '--cwd', work, '--json', ...TIMEOUT, 'Remember the codeword TWIN.'])));
    for (const run of runs) expect(run.json?.turn?.status, run.stdout + run.stderr).toBe('completed');
    const views = await Promise.all(runs.map(async (run) => (await cal(['inspect', run.json.handle, '--json'])).json));
    const ids = views.map((v) => v.provider.nativeSessionId);
    expect(new Set(ids).size).toBe(3);
    const rollouts = await listRollouts(s.codexHome);
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
