import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { lastLineBoundary, readJsonlFrom, waitForChange } from '../../src/transcripts/jsonl-tail.js';
import { scratchDir } from '../support/scratch.js';

async function tmpFile(content: string | Buffer): Promise<string> {
  const dir = await scratchDir('tail');
  const file = path.join(dir, 't.jsonl');
  await fs.writeFile(file, content);
  return file;
}

describe('incremental JSONL tailing', () => {
  it('reads complete lines from an offset and keeps a partial last line for later', async () => {
    const file = await tmpFile('{"a":1}\n{"b":2}\n{"c":');
    const first = await readJsonlFrom(file, 0);
    expect(first.records.map((r) => r.value)).toEqual([{ a: 1 }, { b: 2 }]);
    expect(first.offset).toBe(16);
    await fs.appendFile(file, '3}\n');
    const second = await readJsonlFrom(file, first.offset);
    expect(second.records.map((r) => r.value)).toEqual([{ c: 3 }]);
    expect(second.offset).toBe((await fs.stat(file)).size);
  });

  it('counts lines that are not JSON and keeps going', async () => {
    const file = await tmpFile('{"a":1}\nnot json\n\n{"b":2}\n');
    const read = await readJsonlFrom(file, 0);
    expect(read.records).toHaveLength(2);
    expect(read.skipped).toBe(1);
  });

  it('reports a missing file and a file shorter than the stored offset', async () => {
    expect((await readJsonlFrom('/nonexistent/x.jsonl', 0)).missing).toBe(true);
    const file = await tmpFile('{"a":1}\n');
    expect((await readJsonlFrom(file, 100)).truncated).toBe(true);
  });

  it('a FIFO or a folder where the transcript belongs reads as no transcript yet, at once (never a hang in open)', async () => {
    const dir = await scratchDir('tail');
    const fifo = path.join(dir, 'fifo.jsonl');
    execFileSync('mkfifo', [fifo]);
    expect(await readJsonlFrom(fifo, 0)).toMatchObject({ records: [], missing: true, truncated: false });
    expect(await lastLineBoundary(fifo)).toBe(0);
    expect(await readJsonlFrom(dir, 0)).toMatchObject({ records: [], missing: true });
  });

  it('lastLineBoundary is the offset past the last complete line', async () => {
    expect(await lastLineBoundary(await tmpFile('{"a":1}\n{"b":'))).toBe(8);
    expect(await lastLineBoundary(await tmpFile('{"a":1}\n'))).toBe(8);
    expect(await lastLineBoundary(await tmpFile('{"a":'))).toBe(0);
    expect(await lastLineBoundary('/nonexistent/x.jsonl')).toBe(0);
  });

  it('multi-byte UTF-8 split across read chunks is decoded whole', async () => {
    const big = 'é'.repeat(700_000);
    const file = await tmpFile(`{"t":"${big}"}\n{"u":"日本"}\n`);
    const read = await readJsonlFrom(file, 0);
    expect(read.records.map((r) => r.value)).toEqual([{ t: big }, { u: '日本' }]);
  });

  it('waitForChange wakes on an append well before its timeout', async () => {
    const file = await tmpFile('');
    const started = Date.now();
    setTimeout(() => void fs.appendFile(file, '{"x":1}\n'), 100);
    await waitForChange(file, 5000);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('waitForChange returns at once for a record appended after the last read and before the wait', async () => {
    const file = await tmpFile('{"a":1}\n');
    await readJsonlFrom(file, 0);
    // No notification can reach a watch set up after this write; the wait must still see it.
    await fs.appendFile(file, '{"b":2}\n');
    const started = Date.now();
    await waitForChange(file, 30_000, 10_000);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('waitForChange still waits when nothing was written since the last read (a partial line included)', async () => {
    const file = await tmpFile('{"a":1}\n{"torn":');
    const read = await readJsonlFrom(file, 0);
    expect(read.offset).toBe(8);
    let woke = false;
    const wait = waitForChange(file, 30_000, 10_000).then(() => (woke = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(woke).toBe(false);
    await fs.appendFile(file, '1}\n');
    await wait;
    expect(woke).toBe(true);
  });
});
