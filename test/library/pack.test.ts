import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/clis.js';

/**
 * What `npm pack` would ship: the built entry and its types, the bin, the README and
 * package.json, nothing else (no sources, tests, docs, fixtures or source maps). Needs a build
 * (`npm test` builds first).
 */
const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as Record<string, any>;

async function packedFiles(): Promise<string[]> {
  if (!existsSync(path.join(repoRoot, 'dist', 'index.d.ts'))) throw new Error('dist/index.d.ts is missing: run npm run build first');
  const res = await execa('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: repoRoot, env: { npm_config_loglevel: 'error' } });
  const [entry] = JSON.parse(res.stdout) as Array<{ files: Array<{ path: string }> }>;
  return entry!.files.map((f) => f.path).sort();
}

describe('npm pack', () => {
  it('ships dist (JavaScript and .d.ts), bin, README.md and package.json, and nothing else', async () => {
    const files = await packedFiles();
    for (const needed of ['package.json', 'README.md', 'bin/cal.cjs', 'dist/index.js', 'dist/index.d.ts', 'dist/cli.js', 'dist/library/sessions.js', 'dist/library/types.d.ts', 'dist/bin/cli.cjs']) {
      expect(files).toContain(needed);
    }
    const unexpected = files.filter((f) => !['package.json', 'README.md', 'bin/cal.cjs'].includes(f) && !/^dist\/.+\.(js|d\.ts)$/.test(f) && !/^dist\/bin\/[\w-]+\.cjs$/.test(f) && !/^dist\/util\/compile-cache\.(cjs|d\.cts)$/.test(f));
    expect(unexpected).toEqual([]);
    expect(files.filter((f) => /^(src|test|docs|fixtures|bench|scripts)\//.test(f) || f.endsWith('.map'))).toEqual([]);
    // Every module ships its declarations, so a type in the public surface always resolves; the
    // bundled command line (dist/bin/, run by bin/cal.cjs) is no module anyone imports.
    const js = files.filter((f) => f.startsWith('dist/') && !f.startsWith('dist/bin/') && f.endsWith('.js'));
    expect(js.filter((f) => !files.includes(f.replace(/\.js$/, '.d.ts')))).toEqual([]);
  });

  it('exposes one ESM entry with its types, and package.json; no other path can be imported', () => {
    expect(pkg.type).toBe('module');
    expect(Object.keys(pkg.exports)).toEqual(['.', './package.json']);
    expect(pkg.exports['.']).toEqual({ types: './dist/index.d.ts', default: './dist/index.js' });
    expect(pkg.types).toBe('./dist/index.d.ts');
    expect(pkg.bin).toEqual({ cal: 'bin/cal.cjs' });
    expect(pkg.dependencies.chalk).toBeUndefined();
  });
});
