import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/clis.js';

/**
 * The layers of design §2, enforced on the source: commands never import adapter internals,
 * tmux, transcripts or the engine, nor read transport fields; adapters never import commands,
 * state or sessions; the engine never imports Ink, React or chalk.
 */
const src = path.join(repoRoot, 'src');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const full = path.join(dir, entry);
    return statSync(full).isDirectory() ? files(full) : /\.(ts|tsx)$/.test(entry) ? [full] : [];
  });
}

/** Relative imports resolved to a path under src/ ("commands/start.ts"), bare ones kept as is. */
function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from\s+|import\s*\(\s*)['"]([^'"]+)['"]/g)].map((m) => m[1] as string);
  return specs.map((spec) => (spec.startsWith('.') ? path.relative(src, path.resolve(path.dirname(file), spec)).replace(/\.js$/, '.ts') : spec));
}

const rel = (file: string) => path.relative(src, file);
const under = (file: string, ...dirs: string[]) => dirs.some((d) => file.startsWith(`${d}/`));

describe('import graph', () => {
  const all = files(src);

  it('commands, workflow, state and the TUI never import adapters, tmux, transcripts or the engine', () => {
    const offenders: string[] = [];
    for (const file of all.filter((f) => under(rel(f), 'commands', 'state', 'tui', 'workflow'))) {
      for (const target of imports(file)) {
        if (under(target, 'adapters', 'tmux', 'transcripts', 'engine')) offenders.push(`${rel(file)} → ${target}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('commands and the TUI never read transport fields of a handle', () => {
    const offenders: string[] = [];
    for (const file of all.filter((f) => under(rel(f), 'commands', 'tui', 'workflow'))) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/\.(tmux|paneId|socket|transcript)\b/g)) offenders.push(`${rel(file)}: .${m[1]}`);
    }
    expect(offenders).toEqual([]);
  });

  it('adapters never import commands, state or sessions', () => {
    const offenders: string[] = [];
    for (const file of all.filter((f) => under(rel(f), 'adapters'))) {
      for (const target of imports(file)) {
        if (under(target, 'commands', 'state', 'sessions', 'tui', 'workflow')) offenders.push(`${rel(file)} → ${target}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('the engine, sessions, state, adapters and mechanics never import Ink, React or chalk', () => {
    const offenders: string[] = [];
    for (const file of all.filter((f) => under(rel(f), 'engine', 'sessions', 'state', 'adapters', 'tmux', 'transcripts', 'handles'))) {
      for (const target of imports(file)) {
        if (/^(ink|react|chalk|ora)(\/|$)/.test(target)) offenders.push(`${rel(file)} → ${target}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('mechanics (tmux, transcripts) know no CLI', () => {
    const offenders: string[] = [];
    for (const file of all.filter((f) => under(rel(f), 'tmux', 'transcripts'))) {
      for (const target of imports(file)) if (under(target, 'adapters', 'sessions', 'commands', 'engine', 'state')) offenders.push(`${rel(file)} → ${target}`);
      if (/claude|codex|gemini/i.test(readFileSync(file, 'utf8'))) offenders.push(`${rel(file)} names a CLI`);
    }
    expect(offenders).toEqual([]);
  });
});
