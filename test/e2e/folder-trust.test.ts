import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claudeCodeAdapter } from '../../src/adapters/claude-code/index.js';
import { nativeCopilotBinary } from '../../src/adapters/copilot/binary.js';
import { codexAdapter } from '../../src/adapters/codex/index.js';
import { geminiAdapter } from '../../src/adapters/gemini/index.js';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { baseEnv, killStateTmux, runCal, scratchDir } from '../support/cal.js';
import { cliBin, copilotPackageCache } from '../support/clis.js';

/**
 * Issue 50, items 6 and 12: one trust policy for every CLI. By default cal trusts the folder the
 * caller named (Copilot too, in the user's own ~/.copilot, where its dialog used to hold the first
 * message until exit 10); with `--no-trust` or `trustWorkingDir: false` in the state dir's
 * config.json it trusts nothing on the user's behalf, and a CLI that would ask fails
 * `untrusted_folder` (exit 20) naming the folder, before anything is sent.
 */
describe('the folder-trust policy, on the real CLIs', () => {
  let root: string;
  let server: ModelServer;
  const states: string[] = [];

  beforeAll(async () => {
    root = realpathSync(await scratchDir('folder-trust'));
    server = await startModelServer({ host: '127.0.0.1', port: 0 });
  });

  afterAll(async () => {
    for (const state of states) await killStateTmux(state);
    await server.close();
    await fs.rm(root, { recursive: true, force: true });
  });

  async function folder(name: string, git = false): Promise<string> {
    const dir = path.join(root, 'work', name);
    await fs.mkdir(dir, { recursive: true });
    if (git) execFileSync('git', ['init', '-q', dir]);
    return dir;
  }

  function stateDir(name: string): string {
    const state = path.join(root, 'state', name);
    states.push(state);
    return state;
  }

  /** A Copilot user's shell: their own HOME with ~/.copilot as Copilot left it, BYOK settings in the environment. */
  async function copilotUser(): Promise<{ env: Record<string, string>; config: string }> {
    const home = path.join(root, 'copilot-user');
    const config = path.join(home, '.copilot', 'config.json');
    await fs.mkdir(path.dirname(config), { recursive: true });
    await fs.writeFile(config, '// User settings belong in settings.json.\n// This file is managed automatically.\n{\n  "firstLaunchAt": "2026-12-01T10:00:00.000Z",\n  "appTipShown": true\n}\n');
    const env = baseEnv({
      HOME: home,
      PATH: `${path.dirname(cliBin('copilot'))}:${process.env.PATH ?? '/usr/bin:/bin'}`,
      COPILOT_PROVIDER_BASE_URL: `${server.url}/v1`,
      COPILOT_PROVIDER_TYPE: 'openai',
      COPILOT_PROVIDER_API_KEY: 'byok-key',
      COPILOT_MODEL: 'scripted-model',
      COPILOT_OFFLINE: 'true',
      COPILOT_AUTO_UPDATE: 'false',
      COPILOT_PKG_CACHE_HOME: copilotPackageCache,
    });
    return { env, config };
  }

  it('Copilot in the user\'s own home: a new folder is trusted as the dialog would (default), refused typed under --no-trust, and --no-trust on a continue is kept', async () => {
    const { env, config } = await copilotUser();
    const state = stateDir('copilot');
    const trusted = await folder('copilot-new');
    const start = await runCal(['--state-dir', state, 'start', '--provider', 'copilot', '--name', 'cp', '--cwd', trusted, '--json', 'Remember the codeword KIWI.'], { env });
    expect(start.code, start.stderr).toBe(0);
    expect(start.json.turn.answer).toContain('KIWI');
    const text = readFileSync(config, 'utf8');
    expect(text.startsWith('// User settings belong in settings.json.')).toBe(true);
    expect(JSON.parse(text.replace(/^\/\/.*$/gm, ''))).toMatchObject({ firstLaunchAt: '2026-12-01T10:00:00.000Z', trustedFolders: [trusted] });

    const untrusted = await folder('copilot-other');
    const refused = await runCal(['--state-dir', state, 'start', '--provider', 'copilot', '--no-trust', '--cwd', untrusted, 'Remember the codeword KIWI.'], { env });
    expect(refused.code, refused.stderr).toBe(20);
    expect(refused.stderr).toContain(`cal: untrusted_folder: copilot does not trust ${untrusted}`);
    expect(refused.stderr).toContain('Do you trust the files in this folder?');
    expect(readFileSync(config, 'utf8')).toBe(text);
    expect(refused.stderr).toContain('nothing was sent');

    // The trusted folder's session goes on under --no-trust (Copilot trusts it itself), and keeps the policy.
    await runCal(['--state-dir', state, 'kill-tmux', 'cp'], { env });
    const resumed = await runCal(['--state-dir', state, 'continue', 'cp', '--no-trust', '--json', 'What was the codeword?'], { env });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.json.turn.answer).toContain('KIWI');
    const view = await runCal(['--state-dir', state, 'inspect', 'cp', '--json'], { env });
    expect(view.json.config.trustWorkingDir).toBe(false);
  }, 300_000);

  // The entry cal wrote can be lost before Copilot reads it (another process rewriting
  // config.json, as another Claude Code's rewrite of ~/.claude.json did: claude-many-starts). A
  // wrapper drops it just before the real binary starts: the pane opens at "Confirm folder trust",
  // cal gives it the answer it wrote, and the turn completes.
  it("Copilot in the user's own home whose trust entry is lost before it reads config.json: the dialog gets cal's answer and the turn completes", async () => {
    const { env, config } = await copilotUser();
    const cwd = await folder('copilot-lost-entry');
    const native = nativeCopilotBinary({ path: cliBin('copilot'), realPath: realpathSync(cliBin('copilot')) });
    const drop = `const fs = require('fs'); const f = ${JSON.stringify(config)}; const t = fs.readFileSync(f, 'utf8'); const c = JSON.parse(t.replace(/^\\/\\/.*$/gm, '')); c.trustedFolders = (c.trustedFolders || []).filter((d) => d !== process.cwd()); fs.writeFileSync(f, JSON.stringify(c, null, 2));`;
    const wrapper = path.join(root, 'copilot-losing-trust');
    await fs.writeFile(wrapper, `#!/bin/sh\nif [ "$1" != "--version" ]; then node -e ${JSON.stringify(drop).replace(/\$/g, '\\$')}; fi\nexec ${JSON.stringify(native)} "$@"\n`, { mode: 0o755 });
    const state = stateDir('copilot-lost-entry');
    const run = await runCal(['--state-dir', state, 'start', '--provider', 'copilot', '--cli-path', wrapper, '--cwd', cwd, '--json', '--timeout', '120', '[[cal:reply=past the dialog]] hello'], { env });
    expect(run.code, `${run.stderr} ${run.stdout}`).toBe(0);
    expect(run.json.turn.answer).toBe('past the dialog');
    // The dialog was there: the wrapper's rewrite dropped the entry, and Copilot wrote it back when answered.
    expect(JSON.parse(readFileSync(config, 'utf8').replace(/^\/\/.*$/gm, '')).trustedFolders).toContain(cwd);
  }, 200_000);

  it('--no-trust: Claude Code\'s TUI, Codex\'s TUI in a git repository and Gemini are refused before anything runs; claude -p, which never asks, runs and nothing is trusted', async () => {
    const state = stateDir('no-trust');
    const base = baseEnv({ HOME: path.join(root, 'home-no-trust'), DISABLE_AUTOUPDATER: '1' });
    const claude = await claudeCodeAdapter.scriptedModelEnv(path.join(root, 'claude'), server.url, base);
    const codex = await codexAdapter.scriptedModelEnv(path.join(root, 'codex'), server.url, base);
    const gemini = await geminiAdapter.scriptedModelEnv(path.join(root, 'gemini'), server.url, base);
    const cases = [
      { provider: 'claude-code', env: claude, transport: 'tmux', how: /answer "Yes, I trust this folder"/ },
      { provider: 'codex', env: codex, transport: 'tmux', how: /answer "Trust and continue"/ },
      { provider: 'codex', env: codex, transport: 'tmux', how: /answer "Trust and continue"/ },
      { provider: 'gemini', env: gemini, transport: 'structured', how: /answer "Trust folder"/ },
    ];
    for (const [i, c] of cases.entries()) {
      const dir = await folder(`no-trust-${i}`, c.provider === 'codex');
      // The second Codex case starts in a subfolder of the repository: trust is the root's.
      const cwd = i === 2 ? await folder(`no-trust-${i}/sub`) : dir;
      const run = await runCal(['--state-dir', state, 'start', '--provider', c.provider, '--transport', c.transport, '--no-trust', '--cwd', cwd, 'Remember the codeword KIWI.'], { env: c.env });
      expect(run.code, `${c.provider}: ${run.stderr}`).toBe(20);
      expect(run.stderr, c.provider).toContain(`cal: untrusted_folder: ${c.provider} does not trust ${cwd}`);
      expect(run.stderr, c.provider).toMatch(c.how);
    }
    const claudeJsonFile = path.join(claude.HOME as string, '.claude.json');
    expect(existsSync(claudeJsonFile) ? readFileSync(claudeJsonFile, 'utf8') : '').not.toContain('no-trust-0');

    // claude -p has no trust dialog: it runs under --no-trust, and cal writes no trust entry for it.
    const headless = await folder('no-trust-headless');
    const ran = await runCal(['--state-dir', state, 'start', '--provider', 'claude-code', '--transport', 'structured', '--no-trust', '--name', 'cl', '--cwd', headless, '--json', 'Remember the codeword KIWI.'], { env: claude });
    expect(ran.code, ran.stderr).toBe(0);
    const again = await runCal(['--state-dir', state, 'continue', 'cl', '--json', 'What was the codeword?'], { env: claude });
    expect(again.code, again.stderr).toBe(0);
    expect(again.json.turn.answer).toContain('KIWI');
    const claudeJson = JSON.parse(readFileSync(path.join(claude.HOME as string, '.claude.json'), 'utf8')) as { projects?: Record<string, unknown> };
    expect(Object.keys(claudeJson.projects ?? {})).not.toContain(headless);
  }, 300_000);

  it('trustWorkingDir false in the state dir\'s config.json: as --no-trust for every session; Gemini still runs where the user\'s own trustedFolders.json trusts the folder', async () => {
    const state = stateDir('config-never');
    await fs.mkdir(state, { recursive: true, mode: 0o700 });
    await fs.writeFile(path.join(state, 'config.json'), JSON.stringify({ trustWorkingDir: false }));
    const gemini = await geminiAdapter.scriptedModelEnv(path.join(root, 'gemini-config'), server.url, baseEnv({ HOME: path.join(root, 'home-config') }));
    const refusedDir = await folder('config-refused');
    const refused = await runCal(['--state-dir', state, 'start', '--provider', 'gemini', '--transport', 'structured', '--cwd', refusedDir, 'Remember the codeword KIWI.'], { env: gemini });
    expect(refused.code, refused.stderr).toBe(20);
    expect(refused.stderr).toContain(`cal: untrusted_folder: gemini does not trust ${refusedDir}`);

    // The user trusted this one themselves: Gemini, given nothing by cal, reads their file.
    const mine = await folder('config-mine');
    await fs.writeFile(path.join(gemini.GEMINI_CLI_HOME as string, '.gemini', 'trustedFolders.json'), JSON.stringify({ [mine]: 'TRUST_FOLDER' }));
    const ran = await runCal(['--state-dir', state, 'start', '--provider', 'gemini', '--transport', 'structured', '--cwd', mine, '--json', 'Remember the codeword KIWI.'], { env: gemini });
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.json.turn.answer).toContain('KIWI');
    const view = await runCal(['--state-dir', state, 'inspect', ran.json.handle, '--json'], { env: gemini });
    expect(view.json.config.trustWorkingDir).toBe(false);
  }, 300_000);
});
