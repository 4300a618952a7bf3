import { existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliBin, repoRoot } from '../support/clis.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';

/**
 * The package as an outside project gets it: `npm pack`, installed into a scratch project (from
 * the npm cache, the registry only for what the cache lacks), a program that imports nothing but
 * `coding-agent-loop` type-checked with `tsc --strict` (the package's .d.ts included: no
 * skipLibCheck), then run against the real Claude Code and the scripted model. Run it under
 * flock /tmp/cal-realcli.lock. Needs a build (`npm test` builds first).
 */
const devDependencies = (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies;
const tsc = path.join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
const consumerSource = path.join(repoRoot, 'test', 'library', 'consumer', 'main.ts');

let suite: CliSuite;
let project: string;

beforeAll(async () => {
  if (!existsSync(path.join(repoRoot, 'dist', 'index.d.ts'))) throw new Error('dist/index.d.ts is missing: run npm run build first');
  suite = await cliSuite('claude-code', { prefix: 'library-pack' });
  const packed = await execa('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', suite.root], { cwd: repoRoot });
  const tarball = path.join(suite.root, (JSON.parse(packed.stdout) as Array<{ filename: string }>)[0]!.filename);
  project = path.join(suite.root, 'consumer');
  await fs.mkdir(project);
  await fs.writeFile(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  await execa('npm', ['install', tarball, `@types/node@${devDependencies['@types/node']}`, '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: project });
  await fs.copyFile(consumerSource, path.join(project, 'main.ts'));
  await fs.writeFile(path.join(project, 'example.ts'), docsExample());
  await fs.writeFile(
    path.join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { strict: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', outDir: 'out', types: ['node'], skipLibCheck: false },
      files: ['main.ts', 'example.ts'],
    }),
  );
}, 300_000);

afterAll(async () => {
  await suite?.close();
});

/** The complete example of docs/library.md, so the documentation is type-checked too. */
function docsExample(): string {
  const doc = readFileSync(path.join(repoRoot, 'docs', 'library.md'), 'utf8');
  const block = /```ts\n([\s\S]*?)```/.exec(doc);
  if (!block?.[1]) throw new Error('docs/library.md has no ```ts example');
  return `${block[1]}\nexport {};\n`;
}

/** The names the installed entry exports, read from its .d.ts by the TypeScript checker. */
function exportedNames(): string[] {
  const entry = path.join(project, 'node_modules', 'coding-agent-loop', 'dist', 'index.d.ts');
  const program = ts.createProgram([entry], { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, types: [] });
  const checker = program.getTypeChecker();
  const symbol = checker.getSymbolAtLocation(program.getSourceFile(entry)!)!;
  return checker.getExportsOfModule(symbol).map((s) => s.name).sort();
}

/** The names a program imports from 'coding-agent-loop', and every other module it imports. */
function importsOf(file: string): { names: string[]; others: string[] } {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const names: string[] = [];
  const others: string[] = [];
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    if (statement.moduleSpecifier.text !== 'coding-agent-loop') {
      others.push(statement.moduleSpecifier.text);
      continue;
    }
    const bindings = statement.importClause?.namedBindings;
    if (bindings && ts.isNamedImports(bindings)) names.push(...bindings.elements.map((e) => (e.propertyName ?? e.name).text));
  }
  return { names: names.sort(), others };
}

describe('the packed package in a scratch project', () => {
  it('type-checks with tsc --strict a program that imports only the public entry and names every export', async () => {
    const exported = exportedNames();
    expect(exported).toEqual(expect.arrayContaining(['openSessions', 'CalError', 'TurnError', 'Handle', 'Turn', 'ProviderName', 'EventKind', 'Sessions']));
    const { names, others } = importsOf(path.join(project, 'main.ts'));
    expect(others).toEqual([]);
    expect(exported.filter((name) => !names.includes(name))).toEqual([]);
    const checked = await execa(process.execPath, [tsc, '-p', project], { cwd: project, reject: false });
    expect(checked.stdout + checked.stderr).toBe('');
    expect(checked.exitCode).toBe(0);
  }, 120_000);

  it('runs against the real Claude Code: start, lose the pane, continue natively, ask with five messages (one new one sent), typed errors, certify', async () => {
    const run = await execa(process.execPath, [path.join(project, 'out', 'main.js')], {
      cwd: project,
      env: { ...suite.env, LIB_STATE: suite.state, LIB_CWD: suite.work, LIB_CLI_PATH: cliBin('claude') },
      extendEnv: false,
      reject: false,
      timeout: 400_000,
    });
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    const seen = JSON.parse(run.stdout);
    expect(seen.statuses).toEqual(['completed', 'completed', 'completed']);
    expect(seen.answers[1]).toContain('TANGO');
    expect(seen.answers[2]).toContain('TANGO');
    expect(seen.events).toEqual(expect.arrayContaining(['running', 'completed', 'lost_tmux', 'resuming']));
    expect(seen.recorded).toEqual(expect.arrayContaining(['pane_killed', 'lost_tmux', 'resuming', 'completed', 'stale_handle']));
    expect(seen.progressPhases).toContain('running');
    expect(seen.caught).toEqual([
      { kind: 'stale_handle', exitCode: 6, field: 'messages[0]', details: expect.objectContaining({ field: 'messages[0]', handle: seen.handle }) },
      { kind: 'not_found', exitCode: 3, details: expect.objectContaining({ handle: 'nosuchhandle' }) },
    ]);
    expect(seen.panes).toBe(2);
    expect(seen.listed).toBe('completed');
    expect(seen.recoverActions).toEqual([]);
    expect(seen.certify).toEqual(['CertFreshLaunch:pass']);
    expect(seen.certification).toEqual(['scripted:1']);
    expect(seen.deepImport).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED');

    // The model's log: the ask() turn carried the conversation Claude Code reloaded itself plus
    // exactly one new user message; no earlier message was sent again.
    const requests = suite.server.turnRequests();
    const count = (messages: string[], text: string) => messages.filter((m) => m.includes(text)).length;
    const asked = requests.filter((r) => count(r.userMessages, 'What was the codeword, again?') > 0);
    expect(asked.length).toBeGreaterThan(0);
    for (const r of asked) {
      expect(r.userMessages).toHaveLength(3);
      expect(count(r.userMessages, 'Remember the codeword TANGO.')).toBe(1);
      expect(count(r.userMessages, 'What was the codeword?')).toBe(1);
      expect(count(r.userMessages, 'What was the codeword, again?')).toBe(1);
    }
    const before = requests.filter((r) => !asked.includes(r)).at(-1)!;
    expect(before.userMessages).toHaveLength(2);
  }, 420_000);
});
