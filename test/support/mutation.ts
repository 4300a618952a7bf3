import fc from 'fast-check';

/**
 * Damage done to a JSON document by the property tests of test/security/ (a value replaced or
 * deleted at any depth, an unknown record type, the whole document replaced): what a torn write,
 * another program or an attacker leaves in a file cal reads.
 */

/** Every path to a value inside a JSON document (objects and arrays), depth-first. */
function pathsOf(value: unknown, prefix: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(prefix);
  if (prefix.length > 6) return out;
  if (Array.isArray(value)) value.forEach((v, i) => pathsOf(v, [...prefix, i], out));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) pathsOf(v, [...prefix, k], out);
  return out;
}

export type Mutation = { kind: 'replace'; at: number; with: unknown } | { kind: 'delete'; at: number } | { kind: 'retype'; type: string } | { kind: 'whole'; with: unknown };

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), with: fc.oneof(fc.anything(), fc.constantFrom(null, '', 0, [], {}, true, '\u0000\uFFFD\uD800')) }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('retype' as const), type: fc.string().map((s) => `x-unknown-${s}`) }),
  fc.record({ kind: fc.constant('whole' as const), with: fc.anything() }),
);

export function mutate(record: unknown, m: Mutation): unknown {
  const copy = structuredClone(record);
  if (m.kind === 'whole') return m.with;
  if (m.kind === 'retype') return copy && typeof copy === 'object' && !Array.isArray(copy) ? { ...copy, type: m.type } : copy;
  const paths = pathsOf(copy);
  const p = paths[m.at % paths.length]!;
  if (p.length === 0) return m.kind === 'replace' ? m.with : undefined;
  let parent: any = copy;
  for (const key of p.slice(0, -1)) parent = parent[key];
  const last = p[p.length - 1]!;
  if (m.kind === 'delete') {
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else delete parent[last];
  } else parent[last] = m.with;
  return copy;
}
