import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { TurnObservation, TurnObserver } from '../../src/adapters/types.js';
import { repoRoot } from './clis.js';

/**
 * Transcripts recorded from the real CLIs, in fixtures/ as `<cli>-<version>-<name>.jsonl`
 * (the version they were recorded with, which need not be the one pinned today).
 */
export const fixturesDir = path.join(repoRoot, 'fixtures');

export const recordedVersion = {
  'claude-code': '2.1.328',
  codex: '0.169.0',
  gemini: '0.61.0',
  pi: '0.73.1',
  qwen: '0.24.4',
  copilot: '1.0.102',
  opencode: '1.18.33',
} as const;

export type RecordedCli = keyof typeof recordedVersion;

/** The text of `fixtures/<cli>-<version>-<name>.jsonl`. */
export function fixtureText(cli: RecordedCli, name: string): string {
  return readFileSync(path.join(fixturesDir, `${cli}-${recordedVersion[cli]}-${name}.jsonl`), 'utf8');
}

/** Its lines, blank ones left out. */
export function fixtureLines(cli: RecordedCli, name: string): string[] {
  return fixtureText(cli, name).split('\n').filter(Boolean);
}

/** Its records, one JSON value a line. */
export function fixtureRecords(cli: RecordedCli, name: string): any[] {
  return fixtureLines(cli, name).map((l) => JSON.parse(l));
}

/** The names (as fixtureText takes them) of a CLI's recordings, those ending in `suffix` only, sorted. */
export function fixtureNames(cli: RecordedCli, suffix = ''): string[] {
  const prefix = `${cli}-${recordedVersion[cli]}-`;
  return readdirSync(fixturesDir)
    .filter((f) => f.startsWith(prefix) && f.endsWith(`${suffix}.jsonl`))
    .map((f) => f.slice(prefix.length, -'.jsonl'.length))
    .sort();
}

/** Feeds an observer every record of a recording in file order, and returns it. */
export function feedFixture<O extends TurnObserver>(observer: O, cli: RecordedCli, name: string): O {
  for (const r of fixtureRecords(cli, name)) observer.feed(r);
  return observer;
}

/** The observation of a turn that must have ended (a readable failure when it has not). */
export function ended(o: TurnObserver): Extract<TurnObservation, { phase: 'ended' }> {
  if (o.observation.phase !== 'ended') throw new Error(`turn did not end: ${JSON.stringify(o.observation)}`);
  return o.observation;
}
