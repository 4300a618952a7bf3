import fs from 'node:fs/promises';
import path from 'node:path';

/**
 * A throwaway HOME and CODEX_HOME for the real Codex binary, whose own config.toml (the user's
 * config, as far as cal is concerned) points a custom Responses provider at the scripted model.
 * cal must honour it as it is: nothing here pre-answers trust or resume prompts.
 */
export interface CodexTestEnv {
  env: Record<string, string>;
  codexHome: string;
}

export async function codexTestEnv(root: string, modelUrl: string, base: Record<string, string>): Promise<CodexTestEnv> {
  const home = path.join(root, 'home');
  const codexHome = path.join(home, '.codex');
  await fs.mkdir(codexHome, { recursive: true, mode: 0o700 });
  const configToml = [
    'model = "mock-model"',
    'model_provider = "mock"',
    'approval_policy = "never"',
    'sandbox_mode = "workspace-write"',
    '',
    '[model_providers.mock]',
    'name = "Mock"',
    `base_url = "${modelUrl}/v1"`,
    'wire_api = "responses"',
    'env_key = "MOCK_API_KEY"',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
    '[features]',
    'plugins = false',
    'unbounded_connection_retries = false',
    '',
    '[analytics]',
    'enabled = false',
    '',
  ].join('\n');
  await fs.writeFile(path.join(codexHome, 'config.toml'), configToml, { mode: 0o600 });
  return { codexHome, env: { ...base, HOME: home, CODEX_HOME: codexHome, MOCK_API_KEY: 'x' } };
}

/** Every rollout file under a CODEX_HOME. */
export async function listRollouts(codexHome: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) await walk(full);
      else if (/^rollout-.*\.jsonl$/.test(e.name)) out.push(full);
    }
  };
  await walk(path.join(codexHome, 'sessions'));
  return out.sort();
}

/** The parsed lines of a rollout. */
export async function readRollout(file: string): Promise<any[]> {
  return (await fs.readFile(file, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}
