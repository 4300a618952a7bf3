import fs from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'vitest';
import { baseEnv, runCal, type CalRun } from '../support/cal.js';

/** A secret in the caller's environment that must never appear in any certify output. */
export const SECRET = 'sk-cal-certify-test-secret-7f3a9c1e5b';

export interface CertifyRun extends CalRun {
  results: Record<string, { result: string; evidence: string; failure: string | null; priority: string; capability: string; durationMs: number }>;
}

/** Runs the built `cal certify` as a black box with a clean environment. */
export async function runCertify(state: string, args: string[], env: Record<string, string> = {}): Promise<CertifyRun> {
  await fs.mkdir(path.join(state, '..', 'user-home'), { recursive: true });
  const run = await runCal(['--state-dir', state, 'certify', ...args], {
    env: baseEnv({ ANTHROPIC_API_KEY: SECRET, OPENAI_API_KEY: SECRET, HOME: path.join(state, '..', 'user-home'), ...env }),
    timeoutMs: 600_000,
  });
  const results: CertifyRun['results'] = {};
  for (const r of run.json?.results ?? []) results[r.id] = r;
  return { ...run, results };
}

/** A readable account of a run's failures, for assertion messages. */
export function failures(run: CertifyRun): string {
  const failed = Object.values(run.results).filter((r) => r.result === 'fail');
  return failed.length ? failed.map((r) => `${(r as { id?: string }).id}: ${r.evidence}`).join('\n') : `${run.stderr}\n${run.stdout.slice(0, 2000)}`;
}

export function expectOutcomes(run: CertifyRun, expected: { pass?: string[]; fail?: string[]; skip?: string[] }): void {
  const summary = Object.fromEntries(Object.entries(run.results).map(([id, r]) => [id, r.result]));
  const wanted: Record<string, string> = {};
  for (const id of expected.pass ?? []) wanted[id] = 'pass';
  for (const id of expected.fail ?? []) wanted[id] = 'fail';
  for (const id of expected.skip ?? []) wanted[id] = 'skip';
  expect(summary, failures(run)).toEqual(wanted);
}

/** No trace of the secret anywhere certify writes. */
export async function expectNoSecret(run: CalRun, files: string[]): Promise<void> {
  expect(run.stdout).not.toContain(SECRET);
  expect(run.stderr).not.toContain(SECRET);
  for (const file of files) expect(await fs.readFile(file, 'utf8'), file).not.toContain(SECRET);
}
