import fs from 'node:fs/promises';
import path from 'node:path';
import { createManagedHome } from '../../src/adapters/claude-code/home.js';

/**
 * A throwaway HOME for the real Claude Code binary, pointed at the scripted model. The HOME is
 * managed by cal (marker file), so cal pre-answers onboarding there; retries are off so a
 * scripted failure settles at once.
 */
export async function claudeTestEnv(root: string, modelUrl: string, base: Record<string, string>): Promise<Record<string, string>> {
  const home = path.join(root, 'home');
  await createManagedHome(home);
  return {
    ...base,
    HOME: home,
    ANTHROPIC_BASE_URL: modelUrl,
    ANTHROPIC_AUTH_TOKEN: 'test-token',
    CLAUDE_CODE_MAX_RETRIES: '0',
    DISABLE_AUTOUPDATER: '1',
  };
}

export async function makeWorkDir(root: string, name = 'work'): Promise<string> {
  const dir = path.join(root, name);
  await fs.mkdir(dir, { recursive: true });
  return dir;
}
