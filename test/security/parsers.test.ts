import fs from 'node:fs/promises';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClaudeTurnObserver, classifyRecord as classifyClaude, userText } from '../../src/adapters/claude-code/transcript.js';
import { parseExecStream } from '../../src/adapters/codex/exec.js';
import { CodexTurnObserver, classifyRecord as classifyCodex, userMessageText } from '../../src/adapters/codex/rollout.js';
import type { TurnObserver } from '../../src/adapters/types.js';
import { readJsonlFrom } from '../../src/transcripts/jsonl-tail.js';
import { scratchDir } from '../support/cal.js';
import { recordFault } from '../support/fault-matrix.js';
import { fixtureLines, fixtureNames, fixtureRecords, type RecordedCli } from '../support/fixtures.js';
import { mutate, mutation } from '../support/mutation.js';

/**
 * Issue 7: every transcript parser survives truncated lines, a 10 MB line,
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
