import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionEnv } from '../../src/adapters/copilot/launch.js';
import type { LaunchRequest } from '../../src/adapters/types.js';
import { scratchDir } from '../support/cal.js';
import { removeScratch } from '../support/scratch.js';

/**
 * Copilot has no system prompt flag: cal writes the prompt as an instructions file under the
 * handle's folder. On 91258d3 that folder was made with a recursive mkdir, which follows a link
 * planted at any level, and the prompt was written wherever the link pointed.
 */
describe("Copilot's system-prompt folder is never made through a link", () => {
  let root: string;

  beforeAll(async () => {
    root = await fs.realpath(await scratchDir('copilot-prompt'));
  });
  afterAll(async () => {
    await removeScratch(root);
  });

  const request = (sessionDir: string): LaunchRequest =>
    ({
      cli: { path: '/bin/copilot', realPath: '/bin/copilot', version: '1.0.102' },
      env: { HOME: root },
      config: { cwd: root, model: null, systemPrompt: 'Be brief.', mcpConfigPath: null, toolPolicy: 'default' },
      mode: 'fresh',
      sessionId: null,
      message: 'hi',
      sessionDir,
    }) as LaunchRequest;

  for (const level of ['copilot-instructions', 'copilot-instructions/.github', 'copilot-instructions/.github/instructions']) {
    it(`a link at ${level} is refused (usage) and nothing is written where it points`, async () => {
      const sessionDir = path.join(root, `session-${level.split('/').length}`);
      const elsewhere = path.join(root, `elsewhere-${level.split('/').length}`);
      await fs.mkdir(elsewhere, { mode: 0o700 });
      await fs.mkdir(path.dirname(path.join(sessionDir, level)), { recursive: true, mode: 0o700 });
      await fs.symlink(elsewhere, path.join(sessionDir, level));
      expect(() => sessionEnv(request(sessionDir))).toThrow(expect.objectContaining({ kind: 'usage' }));
      expect(await fs.readdir(elsewhere)).toEqual([]);
    });
  }

  it('without a link, the prompt file is written and its folder named to Copilot', async () => {
    const sessionDir = path.join(root, 'plain');
    const env = sessionEnv(request(sessionDir));
    expect(env.COPILOT_CUSTOM_INSTRUCTIONS_DIRS).toBe(path.join(sessionDir, 'copilot-instructions'));
    expect(existsSync(path.join(sessionDir, 'copilot-instructions', '.github', 'instructions', 'cal-system-prompt.instructions.md'))).toBe(true);
  });
});
