/**
 * `cal model serve` as a black box: the command module is compiled on its own (with the model
 * server it imports), mounted on a commander program from its spec the way src/cli.ts mounts it,
 * and run as a real child process.
 */
import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../support/clis.js';
import { bodies, paths, postJson } from './helpers.js';

const run = promisify(execFile);
// Inside node_modules so that the compiled runner resolves `commander` from the repository.
const outDir = path.join(repoRoot, 'node_modules', '.cache', `cal-model-serve-test-${process.pid}`);
const runner = path.join(outDir, 'run.mjs');
let tmp: string;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'cal-model-serve-'));
  await mkdir(outDir, { recursive: true });
  const tsc = path.join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
  await run(process.execPath, [
    tsc,
    path.join(repoRoot, 'src', 'commands', 'model-serve.ts'),
    path.join(repoRoot, 'src', 'commands', 'register.ts'),
    '--outDir',
    outDir,
    '--rootDir',
    path.join(repoRoot, 'src'),
    '--module',
    'nodenext',
    '--moduleResolution',
    'nodenext',
    '--target',
    'es2022',
    '--strict',
    '--skipLibCheck',
  ]);
  await writeFile(
    runner,
    [
      "import { Command } from 'commander';",
      "import { command } from './commands/model-serve.js';",
      "import { register } from './commands/register.js';",
      "const program = new Command('cal');",
      'register(program, command, (code) => { process.exitCode = code; });',
      'await program.parseAsync(process.argv);',
      '',
    ].join('\n'),
  );
}, 60_000);

afterAll(async () => {
  await rm(outDir, { recursive: true, force: true });
  await rm(tmp, { recursive: true, force: true });
});

function serve(args: string[]): { child: ChildProcessWithoutNullStreams; firstLine: Promise<string>; exit: Promise<{ code: number | null; stderr: string }> } {
  const child = spawn(process.execPath, [runner, 'model', 'serve', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const firstLine = new Promise<string>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      const nl = stdout.indexOf('\n');
      if (nl >= 0) resolve(stdout.slice(0, nl));
    });
    child.on('close', () => reject(new Error(`exited before printing a URL; stderr: ${stderr}`)));
  });
  const exit = new Promise<{ code: number | null; stderr: string }>((resolve) => child.on('close', (code) => resolve({ code, stderr })));
  firstLine.catch(() => undefined);
  return { child, firstLine, exit };
}

describe('cal model serve', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)('prints its base URL first, serves and logs, and exits 0 on %s', async (signal) => {
    const log = path.join(tmp, `requests-${signal}.jsonl`);
    const s = serve(['--port', '0', '--log', log]);
    try {
      const url = await s.firstLine;
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const r = await postJson(url + paths.anthropic, bodies.anthropic('Remember the codeword OLIVE.', { stream: false }));
      expect(JSON.parse(r.text).content[0].text).toBe('OK, I will remember the codeword OLIVE.');
      const entry = JSON.parse((await readFile(log, 'utf8')).trim()) as Record<string, unknown>;
      expect(entry).toMatchObject({ dialect: 'anthropic', reply: 'OK, I will remember the codeword OLIVE.' });
      s.child.kill(signal);
      const { code, stderr } = await s.exit;
      expect(code).toBe(0);
      expect(stderr).toContain('ANTHROPIC_BASE_URL=');
    } finally {
      if (s.child.exitCode === null) s.child.kill('SIGKILL');
    }
  });

  it('refuses a non-loopback host without --allow-remote, and a bad port', async () => {
    const remote = serve(['--host', '0.0.0.0']);
    const r = await remote.exit;
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--allow-remote');
    const port = serve(['--port', 'eighty']);
    expect((await port.exit).code).toBe(2);
  });

  it('binds a non-loopback host with --allow-remote, with a warning', async () => {
    const s = serve(['--host', '0.0.0.0', '--allow-remote']);
    try {
      expect(await s.firstLine).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
      s.child.kill('SIGINT');
      const { code, stderr } = await s.exit;
      expect(code).toBe(0);
      expect(stderr).toContain('non-loopback');
    } finally {
      if (s.child.exitCode === null) s.child.kill('SIGKILL');
    }
  });
});
