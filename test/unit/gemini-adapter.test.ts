import { lstatSync, readlinkSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseHeadlessStream } from '../../src/adapters/gemini/headless.js';
import { checkRetentionOff } from '../../src/adapters/gemini/home.js';
import { geminiAdapter, parsePending } from '../../src/adapters/gemini/index.js';
import { MAX_ATTEMPTS, SYSTEM_PROMPT_FILE, managedSettings, prepareManagedHome } from '../../src/adapters/gemini/managed-home.js';
import type { PinnedCli } from '../../src/handles/schema.js';
import { fixtureText } from '../support/fixtures.js';

/**
 * The Gemini adapter without the binary: the home cal manages per session (the user's settings
 * read, never written; login files linked, never copied), launch argv, and the headless
 * stream-json parser over streams recorded from the real 0.61.0.
 */
const cli: PinnedCli = { path: '/bin/gemini', realPath: '/opt/gemini.js', version: '0.61.0' };
const config = { cwd: '/work/p', model: null, systemPrompt: null, mcpConfigPath: null, toolPolicy: 'default' };

let root: string;
let userHome: string;
let sessionDir: string;
beforeEach(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), 'cal-gemini-adapter-'));
  userHome = path.join(root, 'user');
  sessionDir = path.join(root, 'state', 'homes', 'h1');
  await fs.mkdir(path.join(userHome, '.gemini'), { recursive: true });
  await fs.mkdir(sessionDir, { recursive: true });
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

const stream = (name: string) => fixtureText('gemini', `headless-${name}.stream`);

describe('the Gemini home cal manages for a session', () => {
  it('its settings are the user’s plus what cal needs; the user’s file is read, never written', async () => {
    const userFile = path.join(userHome, '.gemini', 'settings.json');
    const mine = '{ // my settings\n  "general": { "maxAttempts": 7, "vimMode": true, "sessionRetention": { "enabled": true, "maxAge": "30d" } },\n  "mcpServers": { "mine": { "command": "my-server" } },\n  "ui": { "theme": "x" },\n  "security": { "auth": { "selectedType": "oauth-personal" } } }\n';
    await fs.writeFile(userFile, mine);
    const mcp = path.join(root, 'mcp.json');
    await fs.writeFile(mcp, JSON.stringify({ mcpServers: { probe: { command: 'node', args: ['p.js'] }, web: { type: 'sse', url: 'http://127.0.0.1:1/sse' } } }));
    const { home, env } = prepareManagedHome({ HOME: userHome, PATH: '/bin' }, { ...config, mcpConfigPath: mcp, systemPrompt: 'Be brief.' }, sessionDir);
    expect(home).toBe(path.join(sessionDir, 'gemini-home'));
    // HOME stays the user's (tools see it); only Gemini's own home moves.
    expect(env).toEqual({ HOME: userHome, PATH: '/bin', GEMINI_CLI_HOME: home });
    const settings = JSON.parse(await fs.readFile(path.join(home, '.gemini', 'settings.json'), 'utf8'));
    expect(settings.general).toEqual({ maxAttempts: MAX_ATTEMPTS, vimMode: true, sessionRetention: { enabled: false, maxAge: '30d' }, enableAutoUpdate: false, enableAutoUpdateNotification: false });
    expect(settings.ui).toEqual({ theme: 'x', errorVerbosity: 'full' });
    expect(settings.mcpServers).toEqual({
      mine: { command: 'my-server' },
      probe: { command: 'node', args: ['p.js'], trust: true },
      web: { url: 'http://127.0.0.1:1/sse', type: 'sse', trust: true },
    });
    expect(settings.security).toEqual({ auth: { selectedType: 'oauth-personal' } });
    expect(settings.context.fileName).toEqual(['GEMINI.md', SYSTEM_PROMPT_FILE]);
    expect(await fs.readFile(path.join(home, '.gemini', SYSTEM_PROMPT_FILE), 'utf8')).toBe('Be brief.\n');
    expect(await fs.readFile(userFile, 'utf8')).toBe(mine);

    // The next launch without a system prompt drops the file and the extra context name.
    prepareManagedHome({ HOME: userHome }, config, sessionDir);
    const again = JSON.parse(await fs.readFile(path.join(home, '.gemini', 'settings.json'), 'utf8'));
    expect(again.context).toBeUndefined();
    expect(again.mcpServers).toEqual({ mine: { command: 'my-server' } });
    await expect(fs.access(path.join(home, '.gemini', SYSTEM_PROMPT_FILE))).rejects.toThrow();
  });

  it('a lower maxAttempts of the user’s is kept; API-key auth is selected only when the user chose none and a key is set', () => {
    expect((managedSettings({ general: { maxAttempts: 1 } }, { mcpServers: {}, systemPrompt: false, env: {} }).general as Record<string, unknown>).maxAttempts).toBe(1);
    expect(managedSettings({}, { mcpServers: {}, systemPrompt: false, env: { GEMINI_API_KEY: 'k' } }).security).toEqual({ auth: { selectedType: 'gemini-api-key' } });
    expect(managedSettings({}, { mcpServers: {}, systemPrompt: false, env: {} }).security).toBeUndefined();
    expect(managedSettings({ context: { fileName: 'AGENTS.md' } }, { mcpServers: {}, systemPrompt: true, env: {} }).context).toEqual({ fileName: ['AGENTS.md', SYSTEM_PROMPT_FILE] });
  });

  it('the user’s login, keys and customisations are linked, never copied; a file Gemini made in the session is left alone', async () => {
    const user = path.join(userHome, '.gemini');
    await fs.writeFile(path.join(user, 'oauth_creds.json'), '{"access_token":"SECRET-TOKEN"}', { mode: 0o600 });
    await fs.writeFile(path.join(user, 'google_accounts.json'), '{"active":"me@example.com","old":[]}');
    await fs.writeFile(path.join(user, '.env'), 'GEMINI_API_KEY=SECRET-KEY\n');
    await fs.writeFile(path.join(user, 'GEMINI.md'), 'my memory\n');
    await fs.mkdir(path.join(user, 'commands'));
    await fs.mkdir(path.join(userHome, '.agents'));
    const { home } = prepareManagedHome({ HOME: userHome }, config, sessionDir);
    const dir = path.join(home, '.gemini');
    for (const name of ['oauth_creds.json', 'google_accounts.json', '.env', 'GEMINI.md', 'commands']) {
      expect(lstatSync(path.join(dir, name)).isSymbolicLink(), name).toBe(true);
      expect(readlinkSync(path.join(dir, name))).toBe(path.join(user, name));
    }
    expect(readlinkSync(path.join(home, '.agents'))).toBe(path.join(userHome, '.agents'));
    // Nothing the user did not have is linked.
    await expect(fs.lstat(path.join(dir, 'gemini-credentials.json'))).rejects.toThrow();
    // No secret is stored under cal's state: every file there holding one is a link.
    const found: string[] = [];
    const walk = async (d: string) => {
      for (const e of await fs.readdir(d, { withFileTypes: true })) {
        const p = path.join(d, e.name);
        if (e.isDirectory()) await walk(p);
        else if (e.isFile() && /SECRET/.test(await fs.readFile(p, 'utf8'))) found.push(p);
      }
    };
    await walk(sessionDir);
    expect(found).toEqual([]);
    // A login Gemini wrote itself in the session (a real file) stays; a moved target is relinked.
    await fs.rm(path.join(dir, 'google_accounts.json'));
    await fs.writeFile(path.join(dir, 'google_accounts.json'), '{"active":"other@example.com","old":[]}');
    await fs.rm(path.join(dir, 'GEMINI.md'));
    await fs.symlink('/nowhere', path.join(dir, 'GEMINI.md'));
    prepareManagedHome({ HOME: userHome }, config, sessionDir);
    expect(lstatSync(path.join(dir, 'google_accounts.json')).isSymbolicLink()).toBe(false);
    expect(readlinkSync(path.join(dir, 'GEMINI.md'))).toBe(path.join(user, 'GEMINI.md'));
  });

  it('the user’s home is GEMINI_CLI_HOME when set; a settings file that is not JSON is a usage error before anything runs', async () => {
    const other = path.join(root, 'other-home');
    await fs.mkdir(path.join(other, '.gemini'), { recursive: true });
    await fs.writeFile(path.join(other, '.gemini', 'settings.json'), '{"ui": {"theme": "from-gemini-cli-home"}}');
    const { home } = prepareManagedHome({ HOME: userHome, GEMINI_CLI_HOME: other }, config, sessionDir);
    expect(JSON.parse(await fs.readFile(path.join(home, '.gemini', 'settings.json'), 'utf8')).ui.theme).toBe('from-gemini-cli-home');
    await fs.writeFile(path.join(userHome, '.gemini', 'settings.json'), '{ not json');
    await expect(geminiAdapter.prepare({ HOME: userHome }, config)).rejects.toThrow(/not valid JSON/);
    await fs.writeFile(path.join(userHome, '.gemini', 'settings.json'), '{}');
    await fs.writeFile(path.join(root, 'bad-mcp.json'), '{"servers": {}}');
    await expect(geminiAdapter.prepare({ HOME: userHome }, { ...config, mcpConfigPath: path.join(root, 'bad-mcp.json') })).rejects.toThrow(/mcp-config/);
    await expect(geminiAdapter.prepare({ HOME: userHome }, config)).resolves.toBe(false);
  });

  it('only system settings that turn retention back on are refused (cal turns it off in its own home)', async () => {
    const system = path.join(root, 'system.json');
    const env = { HOME: userHome, GEMINI_CLI_SYSTEM_SETTINGS_PATH: system };
    await fs.writeFile(path.join(userHome, '.gemini', 'settings.json'), '{"general": {"sessionRetention": {"enabled": true}}}');
    expect(() => checkRetentionOff(env)).not.toThrow();
    await fs.writeFile(system, '{ /* admin */ "general": {"sessionRetention": {"enabled": true}}}');
    expect(() => checkRetentionOff(env)).toThrow(/system settings/);
  });
});

describe('Gemini launches', () => {
  it('a fresh launch chooses the id, hands the message to -i and runs in the managed home; a resume uses --resume', () => {
    const env = { HOME: userHome };
    const fresh = geminiAdapter.launch({ cli, env, config, mode: 'fresh', sessionId: '11111111-2222-4333-8444-555555555555', message: '-x hello', sessionDir });
    const home = path.join(sessionDir, 'gemini-home');
    expect(fresh).toMatchObject({ cwd: '/work/p', deliversMessage: true, sessionId: `11111111-2222-4333-8444-555555555555@${home}` });
    expect(fresh.argv).toEqual(['/opt/gemini.js', '--session-id', '11111111-2222-4333-8444-555555555555', '--prompt-interactive=-x hello']);
    expect(fresh.env).toEqual({ HOME: userHome, GEMINI_CLI_HOME: home, GEMINI_CLI_TRUST_WORKSPACE: 'true', GEMINI_CLI_NO_RELAUNCH: 'true' });
    // A relaunch of a session that never recorded its first turn keeps the id it chose.
    const again = geminiAdapter.launch({ cli, env, config, mode: 'fresh', sessionId: fresh.sessionId, message: 'hi', sessionDir });
    expect(again.argv).toContain('11111111-2222-4333-8444-555555555555');
    expect(parsePending(again.sessionId as string)).toEqual({ sessionId: '11111111-2222-4333-8444-555555555555', home });
    const resume = geminiAdapter.launch({ cli, env, config: { ...config, model: 'm1', toolPolicy: 'bypass' }, mode: 'resume', sessionId: 'abc', message: 'again', sessionDir });
    expect(resume.argv).toEqual(['/opt/gemini.js', '--model', 'm1', '--approval-mode', 'yolo', '--resume', 'abc', '--prompt-interactive=again']);
    expect(() => geminiAdapter.launch({ cli, env, config, mode: 'fresh', sessionId: null, message: 'x' })).toThrow(/session folder/);
  });

  it('against cal’s scripted model each request names its session in a header; never against the user’s own home', async () => {
    const env = await geminiAdapter.scriptedModelEnv(path.join(root, 'scripted'), 'http://127.0.0.1:9', { PATH: '/bin', GEMINI_CLI_CUSTOM_HEADERS: 'a: b' });
    expect(env).toMatchObject({ GEMINI_CLI_HOME: path.join(root, 'scripted', 'gemini-home'), GOOGLE_GEMINI_BASE_URL: 'http://127.0.0.1:9' });
    await expect(geminiAdapter.prepare(env, config)).resolves.toBe(false);
    const plan = geminiAdapter.launch({ cli, env, config, mode: 'resume', sessionId: 'abc', message: 'hi', sessionDir });
    expect(plan.env.GEMINI_CLI_CUSTOM_HEADERS).toBe('a: b, x-gemini-session-id: abc');
    // The scripted home is the "user's" here: its settings reach the managed home.
    const settings = JSON.parse(await fs.readFile(path.join(sessionDir, 'gemini-home', '.gemini', 'settings.json'), 'utf8'));
    expect(settings.security.auth.selectedType).toBe('gemini-api-key');
    const mine = geminiAdapter.launch({ cli, env: { HOME: userHome }, config, mode: 'resume', sessionId: 'abc', message: 'hi', sessionDir });
    expect(mine.env.GEMINI_CLI_CUSTOM_HEADERS).toBeUndefined();
  });

  it('declares the stall keys that answer the retry dialog with "Stop"', () => {
    expect(geminiAdapter.stallKeys).toEqual({ afterMs: 15_000, keys: ['Down', 'Enter'] });
    expect(geminiAdapter.capabilities).toMatchObject({ tmuxContinuation: true, nativeResumeInTmux: true, structuredTransport: true, needsStableWorkingDir: true });
  });
});

describe('Gemini headless stream-json (recorded from 0.61.0)', () => {
  it('a plain turn: the session id from init, the answer from the assistant deltas, the end from result', () => {
    const s = parseHeadlessStream(stream('remember'));
    expect(s).toMatchObject({ sessionId: 'aaaaaaaa-1111-4222-8333-444444444444', ended: 'completed', answer: 'OK, I will remember the codeword KIWI.', error: null, tools: [], unknownEvents: 0 });
    expect(parseHeadlessStream(stream('recall')).answer).toBe('The codeword was KIWI.');
  });

  it('tool turns: the shell command and MCP call with their output; the answer is the text after the tools', () => {
    const shell = parseHeadlessStream(stream('shell'));
    expect(shell.answer).toBe('Tool finished: hello-from-gemini');
    expect(shell.tools).toEqual([expect.objectContaining({ kind: 'shell', name: 'echo hello-from-gemini', status: 'completed', output: expect.stringContaining('hello-from-gemini') })]);
    const mcp = parseHeadlessStream(stream('mcp'));
    expect(mcp.tools).toEqual([expect.objectContaining({ kind: 'mcp', server: 'calprobe', name: 'echo', input: { text: 'PING' }, status: 'completed' })]);
    expect(mcp.answer).toBe('Tool finished: echo: PING');
  });

  it('a persistent HTTP 500: result status error with the CLI’s own message, no answer', () => {
    const s = parseHeadlessStream(stream('http500'));
    expect(s.ended).toBe('failed');
    expect(s.answer).toBeNull();
    expect(s.error).toMatch(/500|Mock internal server error/);
  });

  it('a hook that stops the agent at a write_file: result "success" with no reply is a failed turn with the CLI\'s reason, never an empty answer', () => {
    const s = parseHeadlessStream(stream('hook-stopped-write-file'));
    expect(s).toMatchObject({ ended: 'failed', answer: null, error: 'Agent execution stopped by hook: write refused by hook' });
    expect(s.tools).toMatchObject([{ kind: 'tool', name: 'write_file', status: 'error' }]);
  });

  it('lines that are not events are counted, never fatal', () => {
    expect(parseHeadlessStream('not json\n{"type":"new-kind"}\n').unknownEvents).toBe(2);
  });
});
