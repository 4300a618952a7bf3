import { readdirSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runNdjson } from '../../src/adapters/ndjson-process.js';
import { runJsonlProcess } from '../../src/adapters/structured-process.js';
import { paneCommand } from '../../src/engine/launch-script.js';
import { tmuxSocketFor } from '../../src/engine/tmux-socket.js';
import { TmuxServer } from '../../src/tmux/tmux.js';
import { runExeca, runFile, shellEnv, spawnChild, startExeca } from '../../src/util/spawn.js';
import { scratchDir } from '../support/cal.js';
import { removeScratch } from '../support/scratch.js';

/**
 * Every process cal starts goes through src/util/spawn.ts, which gives it what a shell would in
 * its working directory: PWD naming that directory (OpenCode runs in the directory PWD names, not
 * in its cwd: on 91258d3 a structured OpenCode start run from another folder ran there and hung to
 * its timeout) and a stdin that cannot block (/dev/null unless cal writes a pipe).
 */
const SRC = path.resolve(import.meta.dirname, '../../src');
const DOOR = path.join(SRC, 'util', 'spawn.ts');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return /\.(ts|tsx|cts|mts)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** The code of a file, its comments blanked (a comment may name `spawn(` freely). */
function code(file: string): string {
  return readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/** A call or an import that starts a process without the door. */
const RAW_CALL = /\b(execa|execaSync|execaNode|execaCommand|execaCommandSync|spawn|spawnSync|execFile|execFileSync|execSync|fork)\s*\(/;
const RAW_IMPORT = /import\s+(?!type\b)[^;]*from\s+['"](node:)?(child_process|execa)['"]|import\(\s*['"](node:)?(child_process|execa)['"]\s*\)|require\(\s*['"](node:)?child_process['"]\s*\)|getBuiltinModule\(\s*['"](node:)?child_process['"]\s*\)/;

describe('one door to child processes', () => {
  it('no module of src/ but util/spawn.ts starts a process or imports what does', () => {
    const offenders: string[] = [];
    for (const file of sourceFiles(SRC)) {
      if (file === DOOR) continue;
      const text = code(file);
      for (const [i, line] of text.split('\n').entries()) {
        if (RAW_CALL.test(line) || RAW_IMPORT.test(line)) offenders.push(`${path.relative(SRC, file)}:${i + 1}: ${line.trim()}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('the check itself finds the raw calls it is for', () => {
    for (const line of ["const c = spawn('x', [])", "await execa('git', ['init'])", 'execFile(exe, args, cb)', 'cp.spawnSync(a)', "import { execa } from 'execa';", "const { spawn } = process.getBuiltinModule('node:child_process');", "await import('execa')"]) {
      expect(RAW_CALL.test(line) || RAW_IMPORT.test(line), line).toBe(true);
    }
    for (const line of ["import type { ChildProcess } from 'node:child_process';", 'spawnChild(file, args)', 'runExeca(file, [], opts)', 're.exec(text)']) {
      expect(RAW_CALL.test(line) || RAW_IMPORT.test(line), line).toBe(false);
    }
  });
});

describe('what the door gives a child', () => {
  let root: string;
  let work: string;
  let elsewhere: string;
  // Not a shell: sh itself resets a PWD that does not name its cwd.
  const printPwd = [process.execPath, '-e', 'process.stdout.write(`${process.env.PWD}|${process.cwd()}\\n`); process.stdin.pipe(process.stdout)'];
  const jsonPwd = [process.execPath, '-e', 'console.log(JSON.stringify({ pwd: process.env.PWD }))'];

  beforeAll(async () => {
    root = await fs.realpath(await scratchDir('spawn-door'));
    work = path.join(root, 'work');
    elsewhere = path.join(root, 'elsewhere');
    await fs.mkdir(work);
    await fs.mkdir(elsewhere);
  });
  afterAll(async () => {
    await removeScratch(root);
  });

  const env = () => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', PWD: elsewhere });

  it('shellEnv: PWD is the working directory, whatever PWD the caller had', () => {
    expect(shellEnv(env(), work).PWD).toBe(work);
    expect(shellEnv({ PWD: elsewhere }, undefined).PWD).toBe(process.cwd());
    expect(shellEnv({ PWD: process.cwd() }, undefined).PWD).toBe(process.cwd());
    expect(shellEnv({}, undefined).PWD).toBe(process.cwd());
  });

  it('spawnChild, runFile, runExeca and startExeca: PWD names the cwd, and stdin is empty (never cal\'s own)', async () => {
    const want = `${work}|${work}\n`;
    expect((await runFile(printPwd[0]!, printPwd.slice(1), { cwd: work, env: env(), timeoutMs: 10_000 })).stdout).toBe(want);
    expect((await runExeca(printPwd[0]!, printPwd.slice(1), { cwd: work, env: env(), timeout: 10_000 })).stdout).toBe(want.trimEnd());
    const { subprocess } = await startExeca(printPwd[0]!, printPwd.slice(1), { cwd: work, env: env(), timeout: 10_000 });
    expect((await subprocess).stdout).toBe(want.trimEnd());
    const child = spawnChild(printPwd[0]!, printPwd.slice(1), { cwd: work, env: env() });
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    await new Promise((resolve) => child.on('close', resolve));
    expect(out).toBe(want);
  });

  it('a structured CLI (runJsonlProcess) and a stream-json one (runNdjson) run with PWD = their cwd', async () => {
    const seen: unknown[] = [];
    await runJsonlProcess({ argv: jsonPwd, env: env(), cwd: work, stdin: '', timeoutMs: 10_000, onEvent: (v) => seen.push(v) });
    await runNdjson({ argv: jsonPwd, env: env(), cwd: work, timeoutMs: 10_000, onEvent: (v) => seen.push(v) });
    expect(seen).toEqual([{ pwd: work }, { pwd: work }]);
  });

  it('a pane (through its launch script) runs with PWD = its cwd', async () => {
    const tmux = new TmuxServer(await tmuxSocketFor(path.join(root, 'tmux')));
    try {
      const out = path.join(root, 'pane-pwd');
      const argv = await paneCommand(path.join(root, 'session'), [process.execPath, '-e', `require('node:fs').writeFileSync(${JSON.stringify(out)}, process.env.PWD)`]);
      await tmux.newPane({ session: 'pwd', cwd: work, argv, env: env() });
      let text = '';
      for (let i = 0; i < 100 && !text; i++) {
        text = await fs.readFile(out, 'utf8').catch(() => '');
        if (!text) await new Promise((r) => setTimeout(r, 50));
      }
      expect(text).toBe(work);
    } finally {
      await tmux.killServer();
    }
  }, 20_000);
});
