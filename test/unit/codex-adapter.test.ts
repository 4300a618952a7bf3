import { spawn } from 'node:child_process';
import { realpathSync, statSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeCodexBinary, wrapperEnv } from '../../src/adapters/codex/binary.js';
import { mcpOverrides, tomlString, trustOverride } from '../../src/adapters/codex/config.js';
import { checkMcpConfig } from '../../src/engine/mcp-config.js';
import { codexAdapter, LAUNCH_TAG_ENV } from '../../src/adapters/codex/index.js';
import { prepareMessage } from '../../src/engine/message.js';
import { dayFolders, fileKey, findRolloutsForFirstMessage, pickRollout, scanLaunches } from '../../src/adapters/codex/sessions.js';
import type { SessionConfig } from '../../src/adapters/types.js';
import { cliBin, pinnedCli, repoRoot } from '../support/clis.js';
import { fixtureRecords } from '../support/fixtures.js';
import { scratchDirSync } from '../support/scratch.js';

const config = (cwd: string, extra: Partial<SessionConfig> = {}): SessionConfig => ({ cwd, model: null, systemPrompt: null, mcpConfigPath: null, toolPolicy: 'default', ...extra });

describe('Codex pinned binary', () => {
  it('resolves the npm wrapper to the native binary of the platform package, with its version and file identity', async () => {
    const found = { path: cliBin('codex'), realPath: realpathSync(cliBin('codex')) };
    expect(found.realPath).toMatch(/bin\/codex\.js$/);
    const native = nativeCodexBinary(found);
    expect(native).toMatch(/vendor\/[^/]+\/bin\/codex$/);
    expect(nativeCodexBinary({ path: native, realPath: native })).toBe(native);
    const pinned = await codexAdapter.resolveCli(undefined, { PATH: `${path.dirname(cliBin('codex'))}:/usr/bin:/bin` });
    const st = statSync(native);
    expect(pinned).toEqual({
      path: cliBin('codex'),
      realPath: native,
      version: pinnedCli.codex.version,
      identity: { size: st.size, mtimeMs: st.mtimeMs, dev: st.dev, ino: st.ino },
      support: 'certified',
      newestCertified: codexAdapter.versions.certified,
    });
  });

  it('gives the native binary the environment the wrapper would', () => {
    const native = nativeCodexBinary({ path: cliBin('codex'), realPath: realpathSync(cliBin('codex')) });
    expect(wrapperEnv(native)).toEqual({
      CODEX_MANAGED_BY_NPM: '1',
      CODEX_MANAGED_PACKAGE_ROOT: realpathSync(path.join(repoRoot, 'node_modules', '@openai', 'codex')),
    });
    expect(wrapperEnv('/usr/local/bin/codex')).toEqual({});
  });
});

describe('Codex command line', () => {
  let dir: string;
  beforeAll(() => {
    dir = realpathSync(scratchDirSync('codex-unit'));
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('TOML strings escape quotes, backslashes, control characters and DEL', () => {
    expect(tomlString('a "b" \\ c\n\t\u0001\u007f')).toBe('"a \\"b\\" \\\\ c\\n\\t\\u0001\\u007F"');
  });

  it('trusts the physical working directory and its git root as one inline table', async () => {
    const repo = path.join(dir, 'repo.v2 "x"');
    await fs.mkdir(path.join(repo, '.git'), { recursive: true });
    await fs.mkdir(path.join(repo, 'sub'));
    await fs.symlink(repo, path.join(dir, 'link'));
    expect(trustOverride(path.join(dir, 'link', 'sub'))).toBe(
      `projects={${tomlString(path.join(repo, 'sub'))} = {"trust_level" = "trusted"}, ${tomlString(repo)} = {"trust_level" = "trusted"}}`,
    );
  });

  it('turns a Claude-style --mcp-config into mcp_servers overrides', async () => {
    const file = path.join(dir, 'mcp.json');
    await fs.writeFile(file, JSON.stringify({ mcpServers: { probe: { command: 'node', args: ['s.mjs'], env: { A: '1' } }, web: { type: 'http', url: 'http://127.0.0.1:1/mcp' } } }));
    expect(mcpOverrides(file)).toEqual(['mcp_servers.probe={"command" = "node", "args" = ["s.mjs"], "env" = {"A" = "1"}}', 'mcp_servers.web={"url" = "http://127.0.0.1:1/mcp"}']);
    await fs.writeFile(file, JSON.stringify({ mcpServers: { 'bad.name': { command: 'x' } } }));
    expect(() => mcpOverrides(file)).toThrow(/letters, digits/);
  });

  it("keeps Codex's own default_tools_approval_mode of a server (issue 20, item 8)", async () => {
    const file = path.join(dir, 'mcp-approve.json');
    await fs.writeFile(file, JSON.stringify({ mcpServers: { probe: { command: 'node', default_tools_approval_mode: 'approve' }, web: { url: 'http://h/mcp', default_tools_approval_mode: 'prompt' } } }));
    expect(mcpOverrides(file)).toEqual(['mcp_servers.probe={"command" = "node", "default_tools_approval_mode" = "approve"}', 'mcp_servers.web={"url" = "http://h/mcp", "default_tools_approval_mode" = "prompt"}']);
  });

  it('a bad --mcp-config is one usage error for every CLI, checked before launch (issue 20, item 8)', async () => {
    const file = path.join(dir, 'mcp-bad.json');
    for (const bad of ['{not json', JSON.stringify({ servers: {} }), JSON.stringify({ mcpServers: { a: { command: 'x', args: 'not-a-list' } } }), JSON.stringify({ mcpServers: { a: { command: 'x', env: { A: 1 } } } })]) {
      await fs.writeFile(file, bad);
      let caught: unknown = null;
      try {
        checkMcpConfig(file);
      } catch (err) {
        caught = err;
      }
      expect(caught, bad).toMatchObject({ kind: 'usage', message: expect.stringContaining('--mcp-config') });
    }
    await fs.writeFile(file, JSON.stringify({ mcpServers: { a: { command: 'x', args: ['y'], env: { A: '1' } }, b: { url: 'http://h', headers: { X: 'y' } } } }));
    expect(() => checkMcpConfig(file)).not.toThrow();
  });

  it('launches the pinned binary with --no-daemon, cal settings as -c, and the message after --', () => {
    const cli = { path: '/x/codex', realPath: '/x/native/codex', version: '0.169.0' };
    const fresh = codexAdapter.launch({ cli, env: { HOME: '/h' }, config: config(dir, { model: 'm1', systemPrompt: 'Be terse.' }), mode: 'fresh', sessionId: 'tag-1', message: '-starts with a dash' });
    expect(fresh.argv.slice(0, 2)).toEqual(['/x/native/codex', '--no-daemon']);
    expect(fresh.argv).toContain('check_for_update_on_startup=false');
    expect(fresh.argv).toContain('tui.resume_cwd="session"');
    expect(fresh.argv).toContain('developer_instructions="Be terse."');
    expect(fresh.argv.join(' ')).toMatch(/--model m1/);
    expect(fresh.argv.find((a) => a.startsWith('projects='))).toContain(tomlString(dir));
    expect(fresh.argv.slice(-2)).toEqual(['--', '-starts with a dash']);
    expect(fresh).toMatchObject({ cwd: dir, deliversMessage: true, sessionId: 'tag-1' });
    expect(fresh.env).toMatchObject({ HOME: '/h', [LAUNCH_TAG_ENV]: 'tag-1', RUST_LIB_BACKTRACE: '0' });
    expect(fresh.argv).not.toContain('resume');

    const resume = codexAdapter.launch({ cli, env: { HOME: '/h', [LAUNCH_TAG_ENV]: 'old' }, config: config(dir), mode: 'resume', sessionId: 'sid-1', message: 'hello' });
    const at = resume.argv.indexOf('resume');
    expect(resume.argv.slice(at, at + 2)).toEqual(['resume', 'sid-1']);
    expect(resume.argv.slice(-2)).toEqual(['--', 'hello']);
    // The overrides are given to the subcommand too (older releases do not pass them down).
    expect(resume.argv.slice(at + 2, -2)).toEqual(resume.argv.slice(2, at));
    expect(resume.argv.slice(at + 2, -2)).toContain('tui.resume_cwd="session"');
    expect(resume.env[LAUNCH_TAG_ENV]).toBeUndefined();
    expect(prepareMessage(codexAdapter, 'tmux', '/status').typed).toBe(' /status');
    expect(prepareMessage(codexAdapter, 'tmux', '!ls').typed).toBe(' !ls');
    expect(prepareMessage(codexAdapter, 'tmux', '\n/status').typed).toBe('\u200b\n/status');
    expect(prepareMessage(codexAdapter, 'tmux', 'plain').typed).toBe('plain');
  });

  it('gives --no-daemon only to releases that have it (0.156.0 on); older ones refuse it', () => {
    const launch = (version: string) => codexAdapter.launch({ cli: { path: '/x/codex', realPath: '/x/native/codex', version }, env: {}, config: config(dir), mode: 'fresh', sessionId: null, message: 'hi' });
    expect(launch('0.156.0').argv[1]).toBe('--no-daemon');
    expect(launch('0.171.0').argv[1]).toBe('--no-daemon');
    expect(launch('0.155.0').argv).not.toContain('--no-daemon');
    expect(launch('0.100.0').argv).not.toContain('--no-daemon');
  });
});

describe('Codex rollout binding', () => {
  let home: string;
  let work: string;
  const created = new Date('2026-11-30T03:11:58.000Z');

  beforeAll(async () => {
    const root = realpathSync(scratchDirSync('codex-bind'));
    home = path.join(root, 'codex-home');
    work = path.join(root, 'work');
    await fs.mkdir(work);
    await fs.symlink(work, path.join(root, 'work-link'));
    const day = path.join(home, 'sessions', '2026', '11', '30');
    await fs.mkdir(day, { recursive: true });
    // The recorded rollout, moved into this test's working directory.
    const lines = fixtureRecords('codex', 'tui-kill-resume.rollout');
    (lines[0] as any).payload.cwd = work;
    await fs.writeFile(path.join(day, 'rollout-2026-11-30T03-11-58-01a22a70-163f-7e60-9c36-4b7c93bb0aa4.jsonl'), lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    // A rollout from another folder with the same first message is not ours.
    const other = lines.map((l: any, i) => (i === 0 ? { ...l, payload: { ...l.payload, cwd: path.join(root, 'elsewhere'), id: '01a22a70-0000-7000-8000-000000000001' } } : l));
    await fs.writeFile(path.join(day, 'rollout-2026-11-30T03-11-58-01a22a70-0000-7000-8000-000000000001.jsonl'), other.map((l) => JSON.stringify(l)).join('\n') + '\n');
  });

  it('binds the rollout whose cwd (by identity), first message and creation time match', async () => {
    const sentAt = new Date(created.getTime() - 5000);
    const found = await findRolloutsForFirstMessage(home, work, 'remember codeword KIWI', sentAt);
    expect(found.map((f) => f.sessionId)).toEqual(['01a22a70-163f-7e60-9c36-4b7c93bb0aa4']);
    const viaLink = await findRolloutsForFirstMessage(home, path.join(path.dirname(work), 'work-link'), 'remember codeword KIWI', sentAt);
    expect(viaLink).toEqual(found);
    const bound = await codexAdapter.bindTranscript({ env: { CODEX_HOME: home }, config: config(work), sessionId: null, message: 'remember codeword KIWI', sentAt });
    expect(bound).toEqual(found[0]);
  });

  it('never binds a rollout whose first message is another, or that is older than the send', async () => {
    expect(await findRolloutsForFirstMessage(home, work, 'what was the codeword?', new Date(created.getTime() - 5000))).toEqual([]);
    expect(await findRolloutsForFirstMessage(home, work, 'remember codeword KIWI', new Date(created.getTime() + 60_000))).toEqual([]);
    expect(await codexAdapter.bindTranscript({ env: { CODEX_HOME: home }, config: config(path.dirname(work)), sessionId: null, message: 'remember codeword KIWI', sentAt: new Date(created.getTime() - 5000) })).toBeNull();
  });

  it('looks in the local and UTC day folders around the send', () => {
    const folders = dayFolders('/h', new Date('2026-11-30T23:30:00Z'), new Date('2026-11-30T23:31:00Z'));
    expect(folders).toContain(path.join('/h', 'sessions', '2026', '11', '30'));
    expect(folders).toContain(path.join('/h', 'sessions', '2026', '12', '01'));
  });
});

describe('Codex rollout choice among launches', () => {
  let files: string[];
  beforeAll(async () => {
    const dir = realpathSync(scratchDirSync('codex-pick'));
    files = ['a', 'b', 'c'].map((n) => path.join(dir, `rollout-2026-11-30T00-00-00-01a22a70-0000-7000-8000-00000000000${n === 'a' ? 1 : n === 'b' ? 2 : 3}.jsonl`));
    for (const f of files) await fs.writeFile(f, '');
  });
  const cands = () => files.map((f, i) => ({ path: f, sessionId: String(i) }));
  const holders = (pairs: [number, string][]) => {
    const map = new Map<string, Set<string>>();
    for (const [i, tag] of pairs) map.set(fileKey(files[i]!)!, new Set([...(map.get(fileKey(files[i]!)!) ?? []), tag]));
    return map;
  };

  it('with our process visible, only the rollout it holds is ours (never a lone other one)', () => {
    const scan = { tags: new Set(['mine', 'other']), holders: holders([[0, 'other']]) };
    expect(pickRollout([cands()[0]!], scan, 'mine')).toEqual({ pick: null, ambiguous: false });
    const later = { tags: new Set(['mine', 'other']), holders: holders([[0, 'other'], [1, 'mine']]) };
    expect(pickRollout(cands().slice(0, 2), later, 'mine')).toEqual({ pick: cands()[1], ambiguous: false });
  });

  it('without /proc, a lone candidate binds and several are ambiguous', () => {
    expect(pickRollout([cands()[2]!], null, 'mine')).toEqual({ pick: cands()[2], ambiguous: false });
    expect(pickRollout(cands(), null, 'mine')).toEqual({ pick: null, ambiguous: true });
  });

  it('a rollout our process holds beside the launch that writes it is not ours (real processes, /proc)', async () => {
    // Launch B writes rollout 1 and holds it; launch A (started after, so listed after B) reads
    // it too for a moment. Only A's own rollout, held by A alone, may bind A (issue 50 item 11).
    const tagName = `CAL_TEST_LAUNCH_${process.pid}`;
    const hold = (tag: string, file: string) => spawn('bash', ['-c', `exec 3<${JSON.stringify(file)}; exec sleep 30`], { env: { ...process.env, [tagName]: tag }, stdio: 'ignore' });
    const b = hold('B', files[1]!);
    await new Promise((r) => setTimeout(r, 200));
    const a = hold('A', files[1]!);
    try {
      let scan = null;
      for (let i = 0; i < 50; i++) {
        scan = await scanLaunches(tagName);
        if (scan?.holders.get(fileKey(files[1]!)!)?.size === 2) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(scan?.tags).toEqual(new Set(['A', 'B']));
      expect(pickRollout([cands()[1]!], scan, 'A')).toEqual({ pick: null, ambiguous: false });
      expect(pickRollout([cands()[1]!], scan, 'B')).toEqual({ pick: null, ambiguous: false });
    } finally {
      a.kill('SIGKILL');
      b.kill('SIGKILL');
    }
  });

  it('our process not visible: rollouts held by other launches are not ours', () => {
    const scan = { tags: new Set(['other']), holders: holders([[0, 'other'], [1, 'other']]) };
    expect(pickRollout(cands(), scan, 'gone')).toEqual({ pick: cands()[2], ambiguous: false });
  });
});
