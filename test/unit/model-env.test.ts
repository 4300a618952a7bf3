import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readServedModel, recordServedModel, scriptedShellEnv, shellLines, shellQuote } from '../../src/sessions/scripted-shell.js';

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
    expect(env.providers).toEqual(['claude-code', 'codex', 'gemini', 'pi', 'qwen', 'copilot', 'opencode']);
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

  it('quotes values for the shell', () => {
    expect(shellQuote('/a/b:c')).toBe('/a/b:c');
    expect(shellQuote("it's a b")).toBe(`'it'\\''s a b'`);
  });

  it('finds the running serve by the record it leaves in the state dir, and forgets it when stopped', async () => {
    const dir = scratch();
    expect(await readServedModel(dir)).toBeNull();
    const forget = await recordServedModel(dir, 'http://127.0.0.1:4100');
    expect(await readServedModel(dir)).toEqual({ url: 'http://127.0.0.1:4100', pid: process.pid });
    await forget();
    expect(await readServedModel(dir)).toBeNull();
  });
});
