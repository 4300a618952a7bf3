import { appendFileSync, renameSync, writeFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readJsonLinesSince } from '../../src/state/fs.js';
import { EventLogs } from '../../src/state/event-log.js';
import { StateStore } from '../../src/state/store.js';
import { scratchDir } from '../support/cal.js';
import { kindOf } from '../support/errors.js';
import { removeScratch } from '../support/scratch.js';

/**
 * A handle's event log is append-only JSONL that `cal events --follow` (and the library's
 * `events(ref, { follow })`) reads while cal writes it: each read takes only what the log gained,
 * whole lines only, and what is read from it is an event by its schema or is passed over.
 */
describe('the event log, read as it grows', () => {
  let root: string;
  let log: string;
  beforeEach(async () => {
    root = await scratchDir('event-log');
    log = path.join(root, 'h.events.jsonl');
  });
  afterEach(async () => removeScratch(root));

  const line = (n: number) => `${JSON.stringify({ n })}\n`;

  it('reads whole lines, holds a line still being written until it is whole, and never reads a line twice', () => {
    writeFileSync(log, line(1) + line(2) + '{"n":');
    const first = readJsonLinesSince(log, null);
    expect(first.values).toEqual([{ n: 1 }, { n: 2 }]);
    expect(first.cursor?.offset).toBe(Buffer.byteLength(line(1) + line(2)));
    expect(readJsonLinesSince(log, first.cursor).values).toEqual([]);
    appendFileSync(log, '3}\n' + line(4));
    const second = readJsonLinesSince(log, first.cursor);
    expect(second.values).toEqual([{ n: 3 }, { n: 4 }]);
    // What was read is not read again: the bytes before the cursor changed in place go unseen.
    const text = line(1) + line(2) + line(3) + line(4);
    writeFileSync(log, text.replace('"n":1', '"n":9'));
    appendFileSync(log, line(5));
    expect(readJsonLinesSince(log, second.cursor).values).toEqual([{ n: 5 }]);
  });

  it('a log cut shorter or replaced by another file is read from its start; a missing one is no lines', () => {
    writeFileSync(log, line(1) + line(2) + line(3));
    const all = readJsonLinesSince(log, null);
    writeFileSync(log, line(7));
    expect(readJsonLinesSince(log, all.cursor).values).toEqual([{ n: 7 }]);

    const seen = readJsonLinesSince(log, null);
    const other = path.join(root, 'other.jsonl');
    writeFileSync(other, line(8) + line(9) + line(10));
    renameSync(other, log);
    expect(readJsonLinesSince(log, seen.cursor).values).toEqual([{ n: 8 }, { n: 9 }, { n: 10 }]);

    expect(readJsonLinesSince(path.join(root, 'gone.jsonl'), seen.cursor)).toEqual({ values: [], cursor: null, from: 0 });
  });

  it('a torn line is skipped, and multi-byte text split across reads comes out whole', () => {
    const word = { text: 'naïve — 日本語' };
    const bytes = Buffer.from(`${JSON.stringify(word)}\n`);
    writeFileSync(log, Buffer.concat([Buffer.from('{"torn\n'), bytes.subarray(0, 13)]));
    const first = readJsonLinesSince(log, null);
    expect(first.values).toEqual([]);
    appendFileSync(log, bytes.subarray(13));
    expect(readJsonLinesSince(log, first.cursor).values).toEqual([word]);
  });

  it('the store passes over lines that are JSON but no event, and follows the log from where it stopped', async () => {
    const store = await StateStore.open(path.join(root, 'state'));
    const file = store.eventsFile('abcdef123');
    const event = (name: string) => ({ time: new Date().toISOString(), handle: 'abcdef123', event: name });
    await store.appendEvent(event('running'));
    appendFileSync(file, '42\n{"event":7}\nnull\n[]\n');
    await store.appendEvent({ ...event('completed'), turn: 't0001-aaaaaa', detail: { turnKey: null } });
    const read = await store.readEventsSince('abcdef123', null);
    expect(read.events.map((e) => e.event)).toEqual(['running', 'completed']);
    expect(read.events[1]).toMatchObject({ turn: 't0001-aaaaaa', detail: { turnKey: null } });
    expect(await store.readEvents('abcdef123')).toEqual(read.events);
    await store.appendEvent(event('failed'));
    expect((await store.readEventsSince('abcdef123', read.cursor)).events.map((e) => e.event)).toEqual(['failed']);
  });

  it('a log read whole again (inspect, every second in the TUI) parses only what it gained, and each caller gets copies of its own', () => {
    const logs = new EventLogs();
    const event = (name: string) => `${JSON.stringify({ time: '2026-12-03T00:00:00.000Z', handle: 'h', event: name, detail: { n: 1 } })}\n`;
    writeFileSync(log, event('running') + event('completed'));
    const first = logs.all(log);
    expect(first.map((e) => e.event)).toEqual(['running', 'completed']);
    first.pop();
    (first[0] as { event: string }).event = 'edited by the caller';
    appendFileSync(log, event('failed'));
    // The bytes read before are not read again: changed in place, they still read as they were.
    const text = event('running') + event('completed') + event('failed');
    writeFileSync(log, text.replace('"running"', '"changed"'));
    const again = logs.all(log);
    expect(again.map((e) => e.event)).toEqual(['running', 'completed', 'failed']);
    (again[1]?.detail as { n: number }).n = 2;
    expect(logs.all(log)[1]?.detail).toEqual({ n: 1 });
    // Another file in its place, or a shorter log, is read whole again; a missing one is no events.
    const other = path.join(root, 'other.jsonl');
    writeFileSync(other, event('queued'));
    renameSync(other, log);
    expect(logs.all(log).map((e) => e.event)).toEqual(['queued']);
    expect(logs.all(path.join(root, 'gone.jsonl'))).toEqual([]);
    // Only the last few logs are kept: an older one is read whole (and right) again.
    for (let i = 0; i < 6; i++) {
      writeFileSync(path.join(root, `l${i}.jsonl`), event(`e${i}`));
      logs.all(path.join(root, `l${i}.jsonl`));
    }
    expect(logs.all(log).map((e) => e.event)).toEqual(['queued']);
  });

  it('a symlink in place of the log is refused', async () => {
    const store = await StateStore.open(path.join(root, 'state'));
    writeFileSync(log, line(1));
    await fs.symlink(log, store.eventsFile('abcdef123'));
    expect(await kindOf(store.readEventsSince('abcdef123', null))).toBe('invalid_handle');
  });
});
