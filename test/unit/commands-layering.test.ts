import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calBin, repoRoot } from '../support/clis.js';
import { loadedFiles, writeLoadRecorder } from '../support/load-recorder.js';

/**
 * Where the library sits (above the agent sessions, below the commands) and what the hot paths
 * load. The modules a run loads are recorded by a module-loader hook in the built `cal`, so the
 * rule is checked on what Node actually imports, not on what the source seems to say.
 */
const src = path.join(repoRoot, 'src');
const run = promisify(execFile);

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const full = path.join(dir, entry);
    return statSync(full).isDirectory() ? files(full) : /\.(ts|tsx)$/.test(entry) ? [full] : [];
  });
}

/** Static (top-level) imports only: `import ... from '...'`, `import '...'` and `export ... from '...'`. */
function staticImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/^(?:import|export)\s(?:[^;]*?\sfrom\s+)?['"]([^'"]+)['"]/gm)].map((m) => m[1] as string);
  return specs.map((spec) => (spec.startsWith('.') ? path.relative(src, path.resolve(path.dirname(file), spec)).replace(/\.js$/, '.ts') : spec));
}

/** Every import, dynamic ones included. */
function allImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from\s+|import\s*\(\s*)['"]([^'"]+)['"]/g)].map((m) => m[1] as string);
  return specs.map((spec) => (spec.startsWith('.') ? path.relative(src, path.resolve(path.dirname(file), spec)).replace(/\.js$/, '.ts') : spec));
}

const rel = (file: string) => path.relative(src, file);
const under = (target: string, ...dirs: string[]) => dirs.some((d) => target.startsWith(`${d}/`));
const terminalUi = /^(ink|react|chalk|ora)(\/|$)/;

describe('layers of the library', () => {
  const library = files(src).filter((f) => rel(f) === 'index.ts' || under(rel(f), 'library'));

  it('the library never imports adapters, the engine, tmux, transcripts, commands or the TUI, nor any terminal UI package', () => {
    const offenders = library.flatMap((file) =>
      allImports(file)
        .filter((t) => under(t, 'adapters', 'engine', 'tmux', 'transcripts', 'commands', 'tui') || terminalUi.test(t))
        .map((t) => `${rel(file)} → ${t}`),
    );
    expect(offenders).toEqual([]);
  });

  it('the commands that are the library surface reach the sessions only through it', () => {
    const surface = ['start', 'continue', 'kill-tmux', 'remove', 'cancel', 'attach', 'inspect', 'show', 'events', 'recover', 'certify'].map((c) => path.join(src, 'commands', `${c}.ts`));
    const offenders = surface.flatMap((file) => allImports(file).filter((t) => under(t, 'sessions')).map((t) => `${rel(file)} → ${t}`));
    expect(offenders).toEqual([]);
    for (const file of surface) expect(allImports(file)).toContain('index.ts');
  });

  it("every module takes zod from util/zod.ts (zod 3's API); zod 4 is loaded only by the ACP SDK", () => {
    // src/adapters/cli-node.ts imported `zod` (zod 4's classic API) on every CLI turn's way.
    const offenders = files(src).flatMap((file) => allImports(file).filter((t) => /^zod(\/|$)/.test(t) && rel(file) !== 'util/zod.ts').map((t) => `${rel(file)} → ${t}`));
    expect(offenders).toEqual([]);
  });

  it('nothing on the way to a command imports Ink, React, ora or chalk at the top level', () => {
    const eager = files(src).filter((f) => rel(f) === 'cli.ts' || rel(f) === 'index.ts' || under(rel(f), 'commands', 'library'));
    const offenders = eager.flatMap((file) => staticImports(file).filter((t) => terminalUi.test(t) || under(t, 'tui') && !t.endsWith('format.ts') && !t.endsWith('source.ts')).map((t) => `${rel(file)} → ${t}`));
    expect(offenders).toEqual([]);
  });
});

describe('what a run of the built cal loads', () => {
  let dir: string;
  // The unbundled program shows module by module what a command loads (support/load-recorder.ts).
  let unbundledBin: string;
  let recorder: string[];

  beforeAll(async () => {
    if (!existsSync(path.join(repoRoot, 'dist', 'cli.js'))) throw new Error('dist/cli.js is missing: run npm run build first');
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'cal-loads-'));
    ({ nodeArgs: recorder, unbundledBin } = await writeLoadRecorder(dir));
  });

  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** The files a run loads: dist modules relative to dist/, packages by name. */
  async function loaded(args: string[], bin = unbundledBin): Promise<{ modules: string[]; packages: string[] }> {
    const res = await run(process.execPath, [...recorder, bin, '--state-dir', path.join(dir, 'state'), ...args], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', NO_COLOR: '1' },
    }).catch((err: { stderr: string }) => ({ stderr: err.stderr }));
    const urls = loadedFiles(res.stderr).files;
    const dist = path.join(repoRoot, 'dist') + path.sep;
    return {
      modules: urls.filter((u) => u.startsWith(dist)).map((u) => u.slice(dist.length)),
      packages: [...new Set(urls.map((u) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u)?.[1]).filter((p): p is string => Boolean(p)))],
    };
  }

  it('cal --version loads no command and no package but commander', async () => {
    const { modules, packages } = await loaded(['--version']);
    expect(modules.filter((m) => m.startsWith('commands/') && m !== 'commands/register.js' && m !== 'commands/spec.js')).toEqual([]);
    expect(packages).toEqual(['commander']);
  });

  it("cal continue loads only its own command's module, and no Ink, React, ora or chalk", async () => {
    const { modules, packages } = await loaded(['continue', 'abcdefg', 'hello']);
    const commands = modules.filter((m) => m.startsWith('commands/')).sort();
    expect(commands).toEqual(['commands/common.js', 'commands/continue.js', 'commands/event-printer.js', 'commands/progress.js', 'commands/register.js', 'commands/spec.js']);
    expect(modules.filter((m) => m.startsWith('tui/') && m !== 'tui/format.js')).toEqual([]);
    expect(packages.filter((p) => terminalUi.test(p))).toEqual([]);
    // execa is for the CLIs that need it (Cursor, Agy, plans, lock), certifications for inspect.
    expect(packages).not.toContain('execa');
    expect(modules).not.toContain('certify/results.js');
  });

  it('the bundled cal loads no package from node_modules on --version, continue, start or inspect --json', async () => {
    // Everything but Ink and React is inside the bundle; those two are for the TUI alone.
    for (const args of [['--version'], ['continue', 'abcdefg', 'hello'], ['start', '--provider', 'claude-code', ''], ['inspect', '--json']]) {
      const { modules, packages } = await loaded(args, calBin);
      expect({ args, packages }).toEqual({ args, packages: [] });
      // The bundle's chunks, and the code-cache loader bin/cal.cjs starts them with.
      expect(modules.filter((m) => !m.startsWith('bin/') && m !== 'util/compile-cache.cjs')).toEqual([]);
      expect(modules).toContain('bin/cli.cjs');
    }
  });

  it('cal start and cal inspect --json load no terminal UI either', async () => {
    for (const args of [['start', '--provider', 'claude-code', ''], ['inspect', '--json'], ['events', 'abcdefg'], ['recover', '--dry-run']]) {
      const { packages } = await loaded(args);
      expect({ args, ui: packages.filter((p) => terminalUi.test(p)) }).toEqual({ args, ui: [] });
    }
  });
});
