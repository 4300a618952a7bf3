import { readFileSync, realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, killStateTmux, scratchDir } from '../support/cal.js';
import { calBin, repoRoot } from '../support/clis.js';

/**
 * Issue 43: the README's "Try it with the scripted model" block, literally, for each CLI cal
 * pins: `cal model serve &`, `eval "$(cal model env)"`, `cal start`, then a continue recalling
 * the codeword. The user's shell has junk keys for every vendor (a set GEMINI_API_KEY once sent
 * Pi to Google), no CLI on PATH (they come from cal's own pinned copies), and its own HOME.
 */
function tryItBlock(): string {
  const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Try it with the scripted model'));
  const m = /```sh\n([\s\S]*?)```/.exec(section);
  if (!m?.[1]) throw new Error('no sh block in the README try-it section');
  return m[1];
}

const providers = ['pi', 'codex', 'claude-code', 'gemini'] as const;

describe("the README's try-it steps on every pinned CLI", () => {
  let root: string;
  let bin: string;

  beforeAll(async () => {
    root = realpathSync(await scratchDir('readme-try'));
    bin = path.join(root, 'bin');
    await fs.mkdir(bin);
    await fs.writeFile(path.join(bin, 'cal'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(calBin)} "$@"\n`, { mode: 0o755 });
  });

  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it('has three commands: serve, eval env, start', () => {
    const commands = tryItBlock().split('\n').filter((l) => l.trim() !== '' && !l.trim().startsWith('#'));
    expect(commands).toHaveLength(3);
    expect(commands[0]).toMatch(/^cal model serve\b.*&/);
    expect(commands[1]).toMatch(/^eval "\$\(cal model env\)"/);
    expect(commands[2]).toMatch(/^cal start --provider pi\b/);
  });

  for (const provider of providers) {
    it(`${provider}: a session on the scripted model, recalled on a continue, with junk vendor keys set`, async () => {
      const dir = path.join(root, provider);
      const home = path.join(dir, 'home');
      const work = path.join(dir, 'work');
      const state = path.join(dir, 'state');
      await Promise.all([fs.mkdir(home, { recursive: true }), fs.mkdir(work, { recursive: true })]);
      // The block as printed, on this provider; then the continue the README shows after it.
      const script = ['set -e', tryItBlock().replaceAll('--provider pi', `--provider ${provider}`), 'cal continue pi-1 "What was the codeword?"', ''].join('\n');
      await fs.writeFile(path.join(dir, 'try.sh'), script);
      const env = baseEnv({
        HOME: home,
        CAL_STATE_DIR: state,
        GEMINI_API_KEY: 'junk-gemini',
        OPENAI_API_KEY: 'junk-openai',
        ANTHROPIC_API_KEY: 'junk-anthropic',
        // The node cal runs on stands for the user's: Pi 1.x needs Node >= 22.19 first on PATH.
        PATH: `${bin}:${path.dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`,
      });
      try {
        const res = await execa('/bin/sh', [path.join(dir, 'try.sh')], { cwd: work, env, extendEnv: false, reject: false, timeout: 240_000 });
        expect(res.exitCode, `${res.stdout}\n${res.stderr}`).toBe(0);
        expect(res.stdout).toContain("The codeword was KIWI.");
      } finally {
        const served = JSON.parse(await fs.readFile(path.join(state, 'model-serve.json'), 'utf8').catch(() => 'null')) as { pid: number } | null;
        if (served) process.kill(served.pid, 'SIGTERM');
        await killStateTmux(state);
      }
    }, 300_000);
  }
});
