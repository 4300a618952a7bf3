import { existsSync, readFileSync, realpathSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, killStateTmux, scratchDir } from '../support/cal.js';
import { calBin, copilotPackageCache, repoRoot } from '../support/clis.js';

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

const providers = ['codex', 'pi', 'claude-code', 'gemini'] as const;

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
    // A provider that runs on every Node the README says cal supports (20.19 too: Pi 1.x does not).
    expect(commands[2]).toMatch(/^cal start --provider codex --name try-1 /);
  });

  for (const provider of providers) {
    it(`${provider}: a session on the scripted model, recalled on a continue, with junk vendor keys set`, async () => {
      const dir = path.join(root, provider);
      const home = path.join(dir, 'home');
      const work = path.join(dir, 'work');
      const state = path.join(dir, 'state');
      await Promise.all([fs.mkdir(home, { recursive: true }), fs.mkdir(work, { recursive: true })]);
      // The block as printed, on this provider; then the continue the README shows after it.
      const script = ['set -e', tryItBlock().replaceAll('--provider codex', `--provider ${provider}`), 'cal continue try-1 "What was the codeword?"', ''].join('\n');
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

/** A user's shell: its own HOME, cal on PATH (the node running the tests first, for Pi), junk vendor keys. */
async function userShell(root: string, name: string): Promise<{ dir: string; env: Record<string, string> }> {
  const dir = path.join(root, name);
  await Promise.all(['home', 'work'].map((d) => fs.mkdir(path.join(dir, d), { recursive: true })));
  const env = baseEnv({
    HOME: path.join(dir, 'home'),
    CAL_STATE_DIR: path.join(dir, 'state'),
    GEMINI_API_KEY: 'junk-gemini',
    OPENAI_API_KEY: 'junk-openai',
    ANTHROPIC_API_KEY: 'junk-anthropic',
    DISABLE_AUTOUPDATER: '1',
    // Copilot's ~235 MB package, unpacked once for every test (a user's shell has its own).
    COPILOT_PKG_CACHE_HOME: copilotPackageCache,
    PATH: `${path.join(root, 'bin')}:${path.dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`,
  });
  return { dir, env };
}

async function stopServes(state: string, pids: number[]): Promise<void> {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
  await killStateTmux(state);
}

describe('cal model env run again, and what it prints', () => {
  let root: string;

  beforeAll(async () => {
    root = realpathSync(await scratchDir('model-env-again'));
    await fs.mkdir(path.join(root, 'bin'));
    await fs.writeFile(path.join(root, 'bin', 'cal'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(calBin)} "$@"\n`, { mode: 0o755 });
  });

  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  // Issue 50, item 7: a second `eval "$(cal model env)"` removed <state>/model-env/, the CLIs' homes.
  it('keeps the sessions of every CLI: start each, model env again, each continue recalls after a native resume', async () => {
    const { dir, env } = await userShell(root, 'sessions');
    const providers = ['claude-code', 'codex', 'gemini', 'pi', 'qwen', 'copilot', 'opencode', 'cline', 'kilo'];
    const script = [
      'cal model serve >/dev/null 2>&1 &',
      'eval "$(cal model env)" || exit 90',
      ...providers.map((p) => `cal start --provider ${p} --name ${p}-1 "Remember the codeword KIWI." >/dev/null; echo "start ${p} $?"`),
      'eval "$(cal model env)" || exit 91',
      // The pane gone, the continue resumes the CLI's own session from its store, under model-env/.
      ...providers.map((p) => `cal kill-tmux ${p}-1 >/dev/null; echo "continue ${p} $(cal continue ${p}-1 "What was the codeword?" 2>&1 | tr '\\n' ' ')"`),
      '',
    ].join('\n');
    await fs.writeFile(path.join(dir, 'again.sh'), script);
    try {
      const res = await execa('/bin/sh', [path.join(dir, 'again.sh')], { cwd: path.join(dir, 'work'), env, extendEnv: false, reject: false, timeout: 900_000 });
      const said = `${res.stdout}\n${res.stderr}`;
      expect(res.exitCode, said).toBe(0);
      for (const p of providers) {
        expect(said, p).toContain(`start ${p} 0`);
        expect(said, p).toMatch(new RegExp(`continue ${p} The codeword was KIWI\\.`));
      }
    } finally {
      const served = JSON.parse(await fs.readFile(path.join(dir, 'state', 'model-serve.json'), 'utf8').catch(() => 'null')) as { pid: number } | null;
      await stopServes(path.join(dir, 'state'), served ? [served.pid] : []);
    }
  }, 960_000);

  // Issue 50, item 8: the output is run by `eval`; a URL with a newline ran its second line.
  it('refuses a URL a shell would read as more than a URL, and prints nothing', async () => {
    const { dir, env } = await userShell(root, 'inject');
    const planted = path.join(dir, 'planted');
    const script = `eval "$(cal model env --url 'http://127.0.0.1:1/\ntouch ${planted}')"; echo "eval $?"\n`;
    const res = await execa('/bin/sh', ['-c', script], { cwd: path.join(dir, 'work'), env, extendEnv: false, reject: false, timeout: 60_000 });
    expect(res.stderr).toMatch(/^cal: usage: --url must be a plain http URL/m);
    expect(existsSync(planted)).toBe(false);
    // The same URL in the record of a running serve (a live pid: this test's).
    await fs.mkdir(path.join(dir, 'state'), { mode: 0o700 });
    await fs.writeFile(path.join(dir, 'state', 'model-serve.json'), JSON.stringify({ url: `http://127.0.0.1:1/\ntouch ${planted}`, pid: process.pid }));
    const fromRecord = await execa('/bin/sh', ['-c', 'eval "$(cal model env)"'], { cwd: path.join(dir, 'work'), env, extendEnv: false, reject: false, timeout: 60_000 });
    expect(fromRecord.stderr).toMatch(/^cal: usage: the url in .*model-serve\.json must be a plain http URL/m);
    expect(existsSync(planted)).toBe(false);
  }, 120_000);

  it('a second cal model serve neither overwrites nor removes the first one\'s record', async () => {
    const { dir, env } = await userShell(root, 'two-serves');
    const record = path.join(dir, 'state', 'model-serve.json');
    const serve = () => execa('cal', ['model', 'serve'], { env, extendEnv: false, reject: false, buffer: true });
    const urlOf = (p: ReturnType<typeof serve>) => new Promise<string>((resolve) => p.stdout?.once('data', (d: Buffer) => resolve(d.toString().trim())));
    const first = serve();
    const pids = [first.pid];
    try {
      const firstUrl = await urlOf(first);
      const recorded = { url: firstUrl, pid: first.pid };
      expect(JSON.parse(await fs.readFile(record, 'utf8'))).toEqual(recorded);
      const second = serve();
      pids.push(second.pid);
      const secondUrl = await urlOf(second);
      expect(secondUrl).not.toBe(firstUrl);
      expect(JSON.parse(await fs.readFile(record, 'utf8'))).toEqual(recorded);
      second.kill('SIGTERM');
      const ended = await second;
      // The second said which one `cal model env` keeps using, and its end left the record alone.
      expect(ended.stderr).toContain(`another cal model serve (pid ${first.pid}, ${firstUrl}) is recorded`);
      expect(JSON.parse(await fs.readFile(record, 'utf8'))).toEqual(recorded);
      const printed = await execa('cal', ['model', 'env', '--provider', 'pi'], { env, extendEnv: false, reject: false });
      expect(printed.stdout).toContain(`on ${firstUrl}`);
    } finally {
      await stopServes(path.join(dir, 'state'), pids.filter((p): p is number => p !== undefined));
    }
  }, 60_000);
});
