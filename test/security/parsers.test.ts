import fs from 'node:fs/promises';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClaudeTurnObserver, classifyRecord as classifyClaude, userText } from '../../src/adapters/claude-code/transcript.js';
import { parseExecStream } from '../../src/adapters/codex/exec.js';
import { CodexTurnObserver, classifyRecord as classifyCodex, userMessageText } from '../../src/adapters/codex/rollout.js';
import type { TurnObserver } from '../../src/adapters/types.js';
import { isCalError } from '../../src/errors.js';
import { AgentSessionHandle, HANDLE_SCHEMA_VERSION } from '../../src/handles/schema.js';
import { StateStore } from '../../src/state/store.js';
import { readJsonlFrom } from '../../src/transcripts/jsonl-tail.js';
import { scratchDir } from '../support/cal.js';
import { recordFault } from '../support/fault-matrix.js';
import { fixtureLines, fixtureNames, fixtureRecords, type RecordedCli } from '../support/fixtures.js';

/**
 * Issue 7: every transcript parser and the handle schema survive truncated lines, a 10 MB line,
 * invalid UTF-8, wrong types and unknown record kinds without throwing (property tests over the
 * transcripts recorded from the real CLIs in fixtures/). Unknown kinds are skipped and counted.
 */
const FILE = 'test/security/parsers.test.ts';
const claudeFixtures = fixtureNames('claude-code');
const codexRollouts = fixtureNames('codex', '.rollout');
const codexExecStreams = fixtureNames('codex', '.events');

/** Messages a person sent in a recording (so an observer actually follows a turn). */
function claudePrompts(recs: unknown[]): string[] {
  const out: string[] = [];
  for (const r of recs) {
    const c = classifyClaude(r);
    if (c.kind === 'user' && !c.record.isMeta) {
      const t = userText(c.record);
      if (t && !t.startsWith('[Request interrupted') && !t.startsWith('<')) out.push(t);
    }
  }
  return out.length ? out : ['never sent'];
}

function codexPrompts(recs: unknown[]): string[] {
  const out: string[] = [];
  for (const r of recs) {
    const c = classifyCodex(r);
    const t = c.kind === 'item' ? userMessageText(c.item) : c.kind === 'user_response_item' ? c.text : null;
    if (t && !t.trimStart().startsWith('<')) out.push(t);
  }
  return out.length ? out : ['never sent'];
}

/** Every path to a value inside a JSON document (objects and arrays), depth-first. */
function pathsOf(value: unknown, prefix: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(prefix);
  if (prefix.length > 6) return out;
  if (Array.isArray(value)) value.forEach((v, i) => pathsOf(v, [...prefix, i], out));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) pathsOf(v, [...prefix, k], out);
  return out;
}

type Mutation = { kind: 'replace'; at: number; with: unknown } | { kind: 'delete'; at: number } | { kind: 'retype'; type: string } | { kind: 'whole'; with: unknown };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), with: fc.oneof(fc.anything(), fc.constantFrom(null, '', 0, [], {}, true, '\u0000\uFFFD\uD800')) }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('retype' as const), type: fc.string().map((s) => `x-unknown-${s}`) }),
  fc.record({ kind: fc.constant('whole' as const), with: fc.anything() }),
);

function mutate(record: unknown, m: Mutation): unknown {
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

function assertObservation(o: TurnObserver): void {
  expect(['waiting', 'running', 'ended']).toContain(o.observation.phase);
  expect(Array.isArray(o.tools)).toBe(true);
  expect(Number.isInteger(o.unknownRecords)).toBe(true);
  expect(typeof o.partialAnswer).toBe('string');
}

const observers = [
  { name: 'Claude Code', cli: 'claude-code' as RecordedCli, fixtures: claudeFixtures, make: (m: string) => new ClaudeTurnObserver(m), prompts: claudePrompts },
  { name: 'Codex', cli: 'codex' as RecordedCli, fixtures: codexRollouts, make: (m: string) => new CodexTurnObserver(m), prompts: codexPrompts },
];

describe.each(observers)('$name transcript observer over the recorded fixtures', ({ name, cli, fixtures, make, prompts }) => {
  it('has fixtures', () => expect(fixtures.length).toBeGreaterThan(3));

  it('never throws on records with wrong types, missing fields, unknown kinds or arbitrary values', () => {
    const cases = fixtures.map((f) => ({ recs: fixtureRecords(cli, f), prompts: prompts(fixtureRecords(cli, f)) }));
    fc.assert(
      fc.property(
        fc.nat(),
        fc.nat(),
        fc.array(fc.tuple(fc.nat(), mutation), { maxLength: 12 }),
        (fi, pi, mutations) => {
          const c = cases[fi % cases.length]!;
          const recs = [...c.recs];
          for (const [at, m] of mutations) recs[at % recs.length] = mutate(recs[at % recs.length], m);
          const o = make(c.prompts[pi % c.prompts.length]!);
          for (const r of recs) o.feed(r);
          assertObservation(o);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('unknown record kinds are skipped (same outcome) and counted', () => {
    const cases = fixtures.map((f) => ({ recs: fixtureRecords(cli, f), prompts: prompts(fixtureRecords(cli, f)) }));
    fc.assert(
      fc.property(
        fc.nat(),
        fc.nat(),
        fc.array(fc.tuple(fc.nat(), fc.string(), fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 3 })), { maxLength: 10 }),
        (fi, pi, inserts) => {
          const c = cases[fi % cases.length]!;
          const prompt = c.prompts[pi % c.prompts.length]!;
          const base = make(prompt);
          let endIdx = Infinity;
          c.recs.forEach((r, i) => {
            base.feed(r);
            if (endIdx === Infinity && base.observation.phase === 'ended') endIdx = i;
          });
          const at = inserts.map(([p]) => p % (c.recs.length + 1)).sort((a, b) => a - b);
          const o = make(prompt);
          let k = 0;
          let counted = 0;
          c.recs.forEach((r, i) => {
            while (k < at.length && at[k] === i) {
              const [, t, body] = inserts[k]!;
              o.feed({ ...body, type: `x-unknown-${t}`, payload: body });
              if (i <= endIdx) counted++;
              k++;
            }
            o.feed(r);
          });
          expect(o.observation).toEqual(base.observation);
          expect(o.tools).toEqual(base.tools);
          expect(o.unknownRecords - base.unknownRecords).toBe(counted);
        },
      ),
      { numRuns: 200 },
    );
    recordFault({
      id: `parser.observer-${name === 'Codex' ? 'codex' : 'claude'}`,
      area: 'parser',
      fault: `${name} transcript records with wrong types, missing fields, unknown kinds, arbitrary JSON`,
      how: `fast-check mutations of the ${fixtures.length} recorded ${name} transcripts in fixtures/`,
      outcome: 'never throws; unknown kinds are skipped (same observation and tools) and counted in unknownRecords',
      state: '-',
      test: FILE,
    });
  });
});

describe('Codex exec --json stream parser', () => {
  it('never throws on mutated, truncated or garbage event lines', () => {
    const streams = codexExecStreams.map((f) => fixtureLines('codex', f));
    expect(streams.length).toBeGreaterThan(2);
    fc.assert(
      fc.property(fc.nat(), fc.array(fc.tuple(fc.nat(), mutation, fc.nat()), { maxLength: 8 }), fc.boolean(), (si, mutations, cut) => {
        const ls = [...streams[si % streams.length]!];
        for (const [at, m, trunc] of mutations) {
          const i = at % ls.length;
          let parsed: unknown;
          try {
            parsed = JSON.parse(ls[i]!);
          } catch {
            parsed = ls[i];
          }
          const mutated = JSON.stringify(mutate(parsed, m)) ?? 'undefined';
          ls[i] = trunc % 3 === 0 ? mutated.slice(0, trunc % (mutated.length + 1)) : mutated;
        }
        let text = ls.join('\n');
        if (cut) text = text.slice(0, Math.floor(text.length / 2));
        // Never throws, and what it returns keeps its shape whatever the input.
        const out = parseExecStream(text);
        expect([null, 'completed', 'failed']).toContain(out.ended);
        expect(Number.isInteger(out.unknownEvents)).toBe(true);
        expect(out.tools.every((t) => typeof t.name === 'string' && ['shell', 'mcp', 'tool'].includes(t.kind))).toBe(true);
        expect(out.answer === null || typeof out.answer === 'string').toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

describe('JSONL tailing survives torn, invalid and huge lines', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await scratchDir('sec-parsers');
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  const allLines = claudeFixtures.flatMap((f) => fixtureLines('claude-code', f)).concat(codexRollouts.flatMap((f) => fixtureLines('codex', f)));
  type LineKind = 'keep' | 'truncate' | 'invalid-utf8' | 'binary' | 'blank';
  const lineCase = fc.tuple(fc.nat(), fc.constantFrom<LineKind>('keep', 'keep', 'keep', 'truncate', 'invalid-utf8', 'binary', 'blank'), fc.nat(), fc.uint8Array({ minLength: 1, maxLength: 40 }));

  function build(cases: [number, LineKind, number, Uint8Array][]): { buf: Buffer; expectRecords: number; nonBlank: number } {
    const parts: Buffer[] = [];
    let expectRecords = 0;
    let nonBlank = 0;
    for (const [li, kind, cut, bytes] of cases) {
      const line = Buffer.from(allLines[li % allLines.length]!, 'utf8');
      let out: Buffer;
      if (kind === 'keep') {
        out = line;
        expectRecords++;
      } else if (kind === 'truncate') out = line.subarray(0, 1 + (cut % (line.length - 1)));
      else if (kind === 'invalid-utf8') {
        const at = cut % line.length;
        out = Buffer.concat([line.subarray(0, at), Buffer.from([0xff, 0xc3, 0x28, 0xed, 0xa0, 0x80]), line.subarray(at)]);
      } else if (kind === 'binary') out = Buffer.from(bytes.filter((b) => b !== 10));
      else out = Buffer.from('   ');
      if (out.toString('utf8').trim()) nonBlank++;
      parts.push(out, Buffer.from('\n'));
    }
    return { buf: Buffer.concat(parts), expectRecords, nonBlank };
  }

  it('property: records + skipped account for every line; offsets are line ends; reading in pieces gives the same records', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(lineCase, { minLength: 1, maxLength: 30 }), fc.array(fc.nat(), { maxLength: 5 }), async (cases, splits) => {
        const { buf, expectRecords, nonBlank } = build(cases);
        const file = path.join(dir, `p${n++}.jsonl`);
        await fs.writeFile(file, buf);
        const whole = await readJsonlFrom(file, 0);
        expect(whole.offset).toBe(buf.length);
        expect(whole.records.length).toBeGreaterThanOrEqual(expectRecords);
        expect(whole.records.length + whole.skipped).toBe(nonBlank);
        let prev = 0;
        for (const r of whole.records) {
          expect(r.endOffset).toBeGreaterThan(prev);
          expect(buf[r.endOffset - 1]).toBe(10);
          prev = r.endOffset;
        }
        // The same bytes appended in pieces and tailed from the returned offset each time.
        const cuts = [...new Set(splits.map((s) => s % buf.length))].sort((a, b) => a - b);
        await fs.writeFile(file, '');
        let offset = 0;
        let written = 0;
        const seen: unknown[] = [];
        for (const c of [...cuts, buf.length]) {
          await fs.appendFile(file, buf.subarray(written, c));
          written = c;
          const part = await readJsonlFrom(file, offset);
          seen.push(...part.records.map((r) => r.value));
          offset = part.offset;
        }
        expect(seen).toEqual(whole.records.map((r) => r.value));
        await fs.rm(file);
      }),
      { numRuns: 150 },
    );
  });

  it('a 10 MB line between normal lines is read (the tail moves past it), a 20 MB line is skipped and counted', async () => {
    const small = allLines[0]!;
    const big = JSON.stringify({ type: 'user', message: { role: 'user', content: 'x'.repeat(10 << 20) } });
    const huge = JSON.stringify({ type: 'assistant', blob: 'y'.repeat(20 << 20) });
    const file = path.join(dir, 'big.jsonl');
    await fs.writeFile(file, [small, big, small, huge, small, ''].join('\n'));
    const size = (await fs.stat(file)).size;
    // Tail as the engine does: from the returned offset, until nothing more comes.
    let offset = 0;
    const values: unknown[] = [];
    let skipped = 0;
    for (let i = 0; i < 20 && offset < size; i++) {
      const read = await readJsonlFrom(file, offset);
      values.push(...read.records.map((r) => r.value));
      skipped += read.skipped;
      if (read.offset === offset) break;
      offset = read.offset;
    }
    expect(offset).toBe(size);
    expect(values).toHaveLength(4);
    expect((values[1] as { message: { content: string } }).message.content.length).toBe(10 << 20);
    expect(skipped).toBe(1);
    // The observer copes with the 10 MB record too.
    const o = new ClaudeTurnObserver('x'.repeat(100));
    for (const v of values) o.feed(v);
    expect(o.observation.phase).toBe('running');
    recordFault({
      id: 'parser.jsonl-tail',
      area: 'parser',
      fault: 'transcript with torn lines, invalid UTF-8, binary noise, a 10 MB line, a 20 MB line',
      how: 'fast-check over recorded fixture lines; incremental tailing from returned offsets',
      outcome: 'never throws; every non-blank line is a record or counted as skipped; the 10 MB line is read, the 20 MB line skipped and counted; offsets stay on line ends',
      state: '-',
      test: FILE,
    });
  });
});

describe('handle schema', () => {
  let root: string;
  let store: StateStore;
  const sample: AgentSessionHandle = AgentSessionHandle.parse({
    schemaVersion: HANDLE_SCHEMA_VERSION,
    id: 'abcdef1234',
    name: 'sample',
    scope: 'chat',
    ownerId: null,
    correlationId: null,
    config: {
      workingDir: { path: '/w', realPath: '/w', dev: 1, ino: 2 },
      model: null,
      systemPromptHash: null,
      mcpConfigHash: null,
      toolPolicy: 'default',
    },
    provider: {
      provider: 'claude-code',
      transport: 'tmux',
      nativeSessionId: '0b5c2a1e-7d3f-4e2a-9c1b-123456789abc',
      tmux: { socket: '/s/tmux.sock', session: 'cal-abcdef1234-1', paneId: '%1' },
      workingDir: { path: '/w', realPath: '/w', dev: 1, ino: 2 },
      model: null,
      status: 'idle',
      cli: { path: '/bin/claude', realPath: '/bin/claude.exe', version: '2.1.328' },
      transcript: { path: '/h/.claude/projects/-w/x.jsonl', offset: 1234 },
    },
    panes: [{ tmux: { socket: '/s/tmux.sock', session: 'cal-abcdef1234-1', paneId: '%1' }, startedAt: '2026-01-01T00:00:00Z', endedAt: null, endReason: null, launch: 'fresh' }],
    createdAt: '2026-01-01T00:00:00Z',
    updatedAt: '2026-01-01T00:00:00Z',
  });

  beforeAll(async () => {
    root = await scratchDir('sec-handles');
    store = await StateStore.open(path.join(root, 'state'));
  });
  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it('property: a damaged handle file loads as a valid handle or fails with invalid_handle, and is never modified', async () => {
    const text = JSON.stringify(sample, null, 2);
    const damage = fc.oneof(
      mutation.map((m) => Buffer.from(JSON.stringify(mutate(structuredClone(sample), m)) ?? '')),
      fc.nat().map((n) => Buffer.from(text.slice(0, n % text.length))),
      fc.tuple(fc.nat(), fc.uint8Array({ minLength: 1, maxLength: 8 })).map(([n, bytes]) => {
        const b = Buffer.from(text);
        const at = n % b.length;
        return Buffer.concat([b.subarray(0, at), Buffer.from(bytes), b.subarray(at)]);
      }),
      fc.integer({ min: HANDLE_SCHEMA_VERSION + 1, max: 1_000_000 }).map((v) => Buffer.from(JSON.stringify({ ...sample, schemaVersion: v, futureField: { x: 1 } }))),
    );
    const file = store.handleFile(sample.id);
    await fc.assert(
      fc.asyncProperty(damage, async (bytes) => {
        await fs.writeFile(file, bytes, { mode: 0o600 });
        try {
          const loaded = await store.loadHandle(sample.id);
          expect(AgentSessionHandle.safeParse(loaded).success).toBe(true);
        } catch (err) {
          expect(isCalError(err) ? err.kind : String(err)).toBe('invalid_handle');
        }
        expect(Buffer.compare(await fs.readFile(file), bytes)).toBe(0);
      }),
      { numRuns: 300 },
    );
  });

  it('a newer schemaVersion is a clear invalid_handle naming both versions; a 10 MB handle file is invalid_handle', async () => {
    const file = store.handleFile(sample.id);
    const newer = JSON.stringify({ ...sample, schemaVersion: HANDLE_SCHEMA_VERSION + 1 });
    await fs.writeFile(file, newer, { mode: 0o600 });
    await expect(store.loadHandle(sample.id)).rejects.toMatchObject({
      kind: 'invalid_handle',
      message: expect.stringMatching(new RegExp(`schema version ${HANDLE_SCHEMA_VERSION + 1}, newer than this cal understands \\(${HANDLE_SCHEMA_VERSION}\\).*left untouched`)),
    });
    expect(await fs.readFile(file, 'utf8')).toBe(newer);
    const big = JSON.stringify({ ...sample, name: 'n'.repeat(10 << 20) });
    await fs.writeFile(file, big, { mode: 0o600 });
    await expect(store.loadHandle(sample.id)).rejects.toMatchObject({ kind: 'invalid_handle' });
    expect((await fs.stat(file)).size).toBe(big.length);
    recordFault({
      id: 'parser.handle-schema',
      area: 'parser',
      fault: 'handle file truncated, with wrong types, invalid UTF-8, 10 MB, or a newer schemaVersion',
      how: 'fast-check damage of a valid handle, loaded through the state store',
      outcome: 'a valid handle or invalid_handle (exit 4), never another error; newer schema: "schema version N, newer than this cal understands (1); upgrade cal (the file was left untouched)"',
      state: 'file byte-for-byte unchanged',
      test: FILE,
    });
  });
});
