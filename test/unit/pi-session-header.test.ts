import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readHeaderId } from '../../src/adapters/pi/home.js';
import { scratchDir } from '../support/cal.js';
import { repoRoot } from '../support/clis.js';
import { removeScratch } from '../support/scratch.js';

/**
 * A Pi session file starts with its header line, `{"type":"session","id":…}` (Pi 0.73.1's files
 * in fixtures/ do); cal finds a session's file by that id, so anything else on the first line
 * names no session.
 */
describe("a Pi session file's header", () => {
  let root: string;
  beforeEach(async () => {
    root = await scratchDir('pi-header');
  });
  afterEach(async () => removeScratch(root));

  const file = (first: string) => {
    const f = path.join(root, `s-${Math.random().toString(36).slice(2)}.jsonl`);
    writeFileSync(f, `${first}\n{"type":"message"}\n`);
    return f;
  };

  it('names its session by the id of a session header, and nothing else does', () => {
    const recorded = path.join(repoRoot, 'fixtures', 'pi-0.73.1-print-resume.session.jsonl');
    const header = JSON.parse(readFileSync(recorded, 'utf8').split('\n')[0] as string) as { id: string };
    expect(readHeaderId(recorded)).toBe(header.id);
    expect(readHeaderId(file('{"type":"session","version":3,"id":"abc-123","cwd":"/w"}'))).toBe('abc-123');
    expect(readHeaderId(file('{"type":"message","id":"abc-123"}'))).toBeNull();
    expect(readHeaderId(file('{"type":"session","id":7}'))).toBeNull();
    expect(readHeaderId(file('{"type":"session"'))).toBeNull();
    expect(readHeaderId(file('42'))).toBeNull();
    expect(readHeaderId(path.join(root, 'missing.jsonl'))).toBeNull();
  });
});
