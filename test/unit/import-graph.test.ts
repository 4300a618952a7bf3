import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/clis.js';

/**
 * The layers of design §2, enforced on the source: commands never import adapter internals,
 * tmux, transcripts or the engine, nor read transport fields; adapters never import commands,
 * state or sessions; the engine never imports state, Ink, React or chalk; sessions never import
 * tmux; only commands import certify (which uses sessions and the adapter registry).
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

/** A layer rule: files under `from` (minus `except`) may not import anything under `forbid`. */
interface LayerRule {
  name: string;
  from: string[];
  except?: string[];
  forbid: (target: string) => boolean;
}

const dirs = (...names: string[]) => (target: string) => under(target, ...names);

const rules: LayerRule[] = [
  { name: 'commands, workflow, state and the TUI never import adapters, tmux, transcripts or the engine', from: ['commands', 'state', 'tui', 'workflow'], forbid: dirs('adapters', 'tmux', 'transcripts', 'engine') },
  { name: 'adapters never import commands, state or sessions', from: ['adapters'], forbid: dirs('commands', 'state', 'sessions', 'tui', 'workflow', 'certify', 'engine') },
  { name: 'the engine, sessions, state, adapters and mechanics never import Ink, React or chalk', from: ['engine', 'sessions', 'state', 'adapters', 'tmux', 'transcripts', 'handles', 'certify'], forbid: (t) => /^(ink|react|chalk|ora)(\/|$)/.test(t) },
  { name: 'mechanics (tmux, transcripts) know no cal layer above them', from: ['tmux', 'transcripts'], forbid: dirs('adapters', 'sessions', 'commands', 'engine', 'state', 'certify') },
  { name: 'the sessions layer never imports tmux (transport mechanics stay behind the engine)', from: ['sessions'], forbid: dirs('tmux', 'transcripts') },
  { name: 'the engine never imports state (it is given what it needs in a TurnRequest)', from: ['engine'], forbid: dirs('state', 'sessions', 'commands', 'workflow', 'certify', 'tui') },
  { name: 'nothing imports certify but commands', from: ['adapters', 'engine', 'sessions', 'state', 'tmux', 'transcripts', 'handles', 'tui', 'workflow', 'model', 'util'], forbid: dirs('certify') },
  {
    name: 'certify uses sessions and the adapter registry, never the engine, tmux or an adapter\'s internals',
    from: ['certify'],
    forbid: (t) => under(t, 'engine', 'tmux', 'transcripts', 'commands', 'tui') || (under(t, 'adapters') && !['adapters/registry.ts', 'adapters/types.ts'].includes(t)),
  },
];

/** Every import of a file under a rule's folders that the rule forbids, as "file → target". */
function violations(graph: Map<string, string[]>, rule: LayerRule): string[] {
  const out: string[] = [];
  for (const [file, targets] of graph) {
    if (!under(file, ...rule.from) || (rule.except && under(file, ...rule.except))) continue;
    for (const target of targets) if (rule.forbid(target)) out.push(`${file} → ${target}`);
  }
  return out;
}

/** Every import cycle (each reported once, from the file where the search met it first). */
function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const done = new Set<string>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const visit = (file: string): void => {
    if (onStack.has(file)) {
      found.push([...stack.slice(stack.indexOf(file)), file]);
      return;
    }
    if (done.has(file) || !graph.has(file)) return;
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) visit(graph.has(target) ? target : `${target}x`);
    stack.pop();
    onStack.delete(file);
    done.add(file);
  };
  for (const file of graph.keys()) visit(file);
  return found;
}

describe('import graph', () => {
  const all = files(src);
  const graph = new Map(all.map((f) => [rel(f), imports(f)]));

  for (const rule of rules) {
    it(rule.name, () => {
      expect(violations(graph, rule)).toEqual([]);
    });
  }

  it('each rule fails when it is broken (a graph with one forbidden import per rule)', () => {
    const broken = new Map<string, string[]>([
      ['commands/start.ts', ['engine/decision.ts']],
      ['adapters/pi/index.ts', ['state/store.ts']],
      ['engine/decision.ts', ['chalk', 'state/store.ts']],
      ['tmux/tmux.ts', ['engine/types.ts']],
      ['sessions/agent-sessions.ts', ['tmux/tmux.ts']],
      ['tui/App.tsx', ['certify/results.ts']],
      ['certify/context.ts', ['engine/transport.ts', 'adapters/claude-code/index.ts']],
    ]);
    for (const rule of rules) expect(violations(broken, rule), rule.name).not.toEqual([]);
    // And the real graph's own imports pass, so the rules are not vacuous: certify may use sessions and the registry.
    expect(violations(new Map([['certify/runner.ts', ['adapters/registry.ts', 'sessions/agent-sessions.ts']]]), rules.at(-1) as LayerRule)).toEqual([]);
  });

  it('commands and the TUI never read transport fields of a handle', () => {
    const offenders: string[] = [];
    for (const file of all.filter((f) => under(rel(f), 'commands', 'tui', 'workflow'))) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/\.(tmux|paneId|socket|transcript)\b/g)) offenders.push(`${rel(file)}: .${m[1]}`);
    }
    expect(offenders).toEqual([]);
  });

  it('mechanics (tmux, transcripts) name no CLI', () => {
    const offenders = all.filter((f) => under(rel(f), 'tmux', 'transcripts')).filter((f) => /claude|codex|gemini/i.test(readFileSync(f, 'utf8')));
    expect(offenders.map(rel)).toEqual([]);
  });

  it('no import cycle in src/ (type-only imports included)', () => {
    expect(cycles(graph)).toEqual([]);
    // The check finds one when there is one.
    expect(cycles(new Map([['a.ts', ['b.ts']], ['b.ts', ['c.ts']], ['c.ts', ['a.ts']]]))).toEqual([['a.ts', 'b.ts', 'c.ts', 'a.ts']]);
  });

  it('no file in src/ is over 400 lines', () => {
    const long = all.map((f) => [rel(f), readFileSync(f, 'utf8').split('\n').length] as const).filter(([, n]) => n > 400);
    expect(long).toEqual([]);
  });
});
