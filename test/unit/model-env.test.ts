import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { scriptedShellEnv, shellLines, shellQuote } from '../../src/sessions/scripted-shell.js';
import { checkModelUrl, readServedModel, recordServedModel, servedModelFile } from '../../src/sessions/served-model.js';
import { servedModelHints } from '../../src/commands/model-serve.js';

const dirs: string[] = [];
function scratch(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cal-model-env-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('cal model env', () => {
  it('points every offline CLI at the URL, leaves HOME alone and unsets the real keys a CLI would take', async () => {
    const dir = scratch();
    const base = { HOME: '/home/u', PATH: '/usr/bin:/bin', GEMINI_API_KEY: 'junk', OPENAI_API_KEY: 'junk', ANTHROPIC_API_KEY: 'junk', GOOGLE_API_KEY: 'junk' };
    const env = await scriptedShellEnv(path.join(dir, 'model-env'), 'http://127.0.0.1:4100', base);
    const set = Object.fromEntries(env.set);
    expect(env.providers).toEqual(['claude-code', 'codex', 'gemini', 'pi', 'qwen', 'copilot', 'opencode', 'cline', 'kilo']);
    expect(set.HOME).toBeUndefined();
    expect(env.unset).toEqual(['ANTHROPIC_API_KEY', 'GOOGLE_API_KEY']);
    expect(set.ANTHROPIC_BASE_URL).toBe('http://127.0.0.1:4100');
    expect(set.GOOGLE_GEMINI_BASE_URL).toBe('http://127.0.0.1:4100');
    expect(set.GEMINI_API_KEY).not.toBe('junk');
    // Pi is pinned to the scripted provider and model, whatever keys are set.
    const pi = JSON.parse(readFileSync(path.join(set.PI_CODING_AGENT_DIR as string, 'settings.json'), 'utf8'));
    expect(pi).toMatchObject({ defaultProvider: 'mock', defaultModel: 'scripted-model' });
    const models = JSON.parse(readFileSync(path.join(set.PI_CODING_AGENT_DIR as string, 'models.json'), 'utf8'));
    expect(models.providers.mock.baseUrl).toBe('http://127.0.0.1:4100/v1');
    expect(readFileSync(path.join(set.CODEX_HOME as string, 'config.toml'), 'utf8')).toContain('base_url = "http://127.0.0.1:4100/v1"');
    expect(existsSync(path.join(set.CLAUDE_CONFIG_DIR as string, '.cal-managed-home'))).toBe(true);
    // Qwen Code: its own config folder (HOME stays), the OpenAI-compatible endpoint and a key that is not the user's.
    expect(JSON.parse(readFileSync(path.join(set.QWEN_HOME as string, 'settings.json'), 'utf8'))).toMatchObject({ security: { auth: { selectedType: 'openai' } } });
    expect(set.OPENAI_BASE_URL).toBe('http://127.0.0.1:4100/v1');
    expect(set.OPENAI_API_KEY).not.toBe('junk');
    // Copilot: BYOK at the URL, offline, in a Copilot home of cal's (COPILOT_HOME; HOME and its package cache stay the user's).
    expect(set).toMatchObject({ COPILOT_PROVIDER_BASE_URL: 'http://127.0.0.1:4100/v1', COPILOT_PROVIDER_TYPE: 'openai', COPILOT_MODEL: 'scripted-model', COPILOT_OFFLINE: 'true' });
    expect(existsSync(path.join(set.COPILOT_HOME as string, '.cal-managed-home'))).toBe(true);
    expect(set.COPILOT_PKG_CACHE_HOME).toBeUndefined();
    // OpenCode: its own config file (HOME and the XDG folders stay) with one provider at the URL, no catalogue download.
    expect(JSON.parse(readFileSync(set.OPENCODE_CONFIG as string, 'utf8')).provider.scripted.options.baseURL).toBe('http://127.0.0.1:4100/v1');
    expect(set.OPENCODE_DISABLE_MODELS_FETCH).toBe('1');
    expect(set.XDG_DATA_HOME).toBeUndefined();
    // Kilo Code CLI: the same under its own names (KILO_CONFIG, its telemetry off).
    expect(JSON.parse(readFileSync(set.KILO_CONFIG as string, 'utf8')).provider.scripted.options.baseURL).toBe('http://127.0.0.1:4100/v1');
    expect(set).toMatchObject({ KILO_DISABLE_MODELS_FETCH: '1', KILO_TELEMETRY_LEVEL: 'off' });
    // The CLIs pinned beside cal are found even when PATH has none of them.
    expect(set.PATH).toBe(`${path.join(dir, 'model-env', 'bin')}:/usr/bin:/bin`);
    expect(existsSync(path.join(dir, 'model-env', 'bin', 'pi'))).toBe(true);
    const lines = shellLines(env);
    expect(lines[0]).toBe('unset ANTHROPIC_API_KEY');
    expect(lines).toContain('export ANTHROPIC_BASE_URL=http://127.0.0.1:4100');
  });

  it('configures one provider, and refuses one that cannot run offline', async () => {
    const dir = scratch();
    const env = await scriptedShellEnv(dir, 'http://127.0.0.1:4100', { HOME: '/h', PATH: '/bin', GEMINI_API_KEY: 'junk' }, 'pi');
    expect(env.set.map(([k]) => k)).toEqual(['PATH', 'PI_CODING_AGENT_DIR', 'PI_OFFLINE']);
    await expect(scriptedShellEnv(dir, 'http://x', { PATH: '/bin' }, 'cursor')).rejects.toThrow(/cursor cannot use the scripted model/);
  });

  // Issue 52 §4: the hints `cal model serve` prints name every CLI `cal model env` configures.
  it('model serve\'s hints cover every CLI that can use the scripted model', async () => {
    const hints = servedModelHints('http://127.0.0.1:4100').join('\n');
    for (const name of ['Claude Code', 'Codex', 'Gemini CLI', 'Pi', 'Qwen Code', 'Copilot CLI', 'OpenCode', 'Kilo Code CLI']) expect(hints, name).toContain(`${name}:`);
    expect(servedModelHints('http://x')).toHaveLength((await scriptedShellEnv(scratch(), 'http://127.0.0.1:4100', { PATH: '/bin', HOME: '/h' })).providers.length);
  });

  it('quotes values for the shell', () => {
    expect(shellQuote('/a/b:c')).toBe('/a/b:c');
    expect(shellQuote("it's a b")).toBe(`'it'\\''s a b'`);
  });

  it('finds the running serve by the record it leaves in the state dir, and forgets it when stopped', async () => {
    const dir = scratch();
    expect(await readServedModel(dir)).toBeNull();
    const record = await recordServedModel(dir, 'http://127.0.0.1:4100');
    expect(await readServedModel(dir)).toEqual({ url: 'http://127.0.0.1:4100', pid: process.pid });
    if (!record.recorded) throw new Error('not recorded');
    await record.forget();
    expect(await readServedModel(dir)).toBeNull();
  });

  // Issue 50, item 7: the folders model env writes are the CLIs' homes, holding every session.
  it('run again, rewrites its config files and keeps every file the CLIs wrote beside them', async () => {
    const dir = path.join(scratch(), 'model-env');
    const base = { HOME: '/home/u', PATH: '/usr/bin:/bin' };
    const first = Object.fromEntries((await scriptedShellEnv(dir, 'http://127.0.0.1:4100', base)).set);
    const sessions = [
      path.join(first.CODEX_HOME as string, 'sessions', 'rollout.jsonl'),
      path.join(first.PI_CODING_AGENT_DIR as string, 'sessions', 'pi.jsonl'),
      path.join(first.CLAUDE_CONFIG_DIR as string, 'projects', 'p', 'claude.jsonl'),
      path.join(first.COPILOT_HOME as string, 'session-state', 'id', 'events.jsonl'),
      path.join(first.QWEN_HOME as string, 'projects', 'p', 'chats', 'q.jsonl'),
    ];
    for (const file of sessions) {
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, '{}\n');
    }
    const second = Object.fromEntries((await scriptedShellEnv(dir, 'http://127.0.0.1:4200', base)).set);
    expect(second.CODEX_HOME).toBe(first.CODEX_HOME);
    for (const file of sessions) expect(readFileSync(file, 'utf8'), file).toBe('{}\n');
    // The config it owns points at the new URL.
    expect(readFileSync(path.join(second.CODEX_HOME as string, 'config.toml'), 'utf8')).toContain('http://127.0.0.1:4200/v1');
    expect(existsSync(path.join(dir, 'bin', 'pi'))).toBe(true);
  });

  // Issue 50, item 8: what model env prints, a shell evaluates.
  it('takes only a plain http URL', () => {
    expect(checkModelUrl('http://127.0.0.1:4100/', '--url')).toBe('http://127.0.0.1:4100');
    expect(checkModelUrl('https://models.example.com/scripted', '--url')).toBe('https://models.example.com/scripted');
    for (const bad of ['http://127.0.0.1:1\ntouch /tmp/x', 'http://127.0.0.1:1/$(id)', "http://127.0.0.1:1/'", 'http://a b', 'ftp://127.0.0.1', 'http://u:p@127.0.0.1:1', 'http://127.0.0.1:1/?q=1', 'http://127.0.0.1:1/`id`', 'http://127.0.0.1:1/\u0085']) {
      expect(() => checkModelUrl(bad, '--url'), bad).toThrow(/plain http URL/);
    }
  });

  it('prints lines a shell runs as exports only, whatever the values hold', () => {
    const nasty = "a'b\n$(touch x)`id`;\\";
    const lines = shellLines({ set: [['X', nasty]], unset: [], providers: [] });
    const out = execFileSync('/bin/sh', ['-c', `${lines.join('\n')}\nprintf %s "$X"`], { encoding: 'utf8' });
    expect(out).toBe(nasty);
    expect(() => shellLines({ set: [['A;B', 'v']], unset: [], providers: [] })).toThrow(/not a shell variable name/);
  });

  it('refuses a served-model record that is a symlink, a FIFO or torn, naming it', async () => {
    const dir = scratch();
    const file = servedModelFile(dir);
    writeFileSync(file, '{"url":"http://127.0.0.1:1","pi');
    await expect(readServedModel(dir)).rejects.toThrow(/model-serve.json is unreadable/);
    rmSync(file);
    writeFileSync(path.join(dir, 'elsewhere.json'), JSON.stringify({ url: 'http://127.0.0.1:1', pid: process.pid }));
    symlinkSync(path.join(dir, 'elsewhere.json'), file);
    await expect(readServedModel(dir)).rejects.toThrow(/symlink/);
    rmSync(file);
    execFileSync('mkfifo', [file]);
    await expect(readServedModel(dir)).rejects.toThrow(/FIFO/);
    await expect(recordServedModel(dir, 'http://127.0.0.1:2')).rejects.toThrow(/FIFO/);
    rmSync(file);
    writeFileSync(file, JSON.stringify({ url: 'http://127.0.0.1:1\ntouch /tmp/x', pid: process.pid }));
    await expect(readServedModel(dir)).rejects.toThrow(/plain http URL/);
  });

  it('a second serve keeps the first one\'s record, and replaces one left by a server that is gone', async () => {
    const dir = scratch();
    const file = servedModelFile(dir);
    const parent = process.ppid;
    writeFileSync(file, JSON.stringify({ url: 'http://127.0.0.1:4100', pid: parent }));
    const second = await recordServedModel(dir, 'http://127.0.0.1:4200');
    expect(second).toEqual({ recorded: false, other: { url: 'http://127.0.0.1:4100', pid: parent } });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ url: 'http://127.0.0.1:4100', pid: parent });
    // A pid that no process has: the record of a server killed without its cleanup.
    writeFileSync(file, JSON.stringify({ url: 'http://127.0.0.1:4100', pid: 2 ** 22 + 1 }));
    const third = await recordServedModel(dir, 'http://127.0.0.1:4300');
    expect(third.recorded).toBe(true);
    expect(await readServedModel(dir)).toEqual({ url: 'http://127.0.0.1:4300', pid: process.pid });
  });
});
