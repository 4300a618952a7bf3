import { promises as fs } from 'node:fs';
import path from 'node:path';
import { z } from '../util/zod.js';
import { ensurePrivateDir, readJsonFile, writeJsonAtomic } from '../state/fs.js';
import { CalError } from '../errors.js';
import { calVersion } from '../util/package-root.js';
import type { CertifyReport } from './types.js';
import { certIds } from './types.js';

/**
 * Certification results in the state directory, by provider and CLI version:
 * `<state>/certifications/<provider>/<version>.json`. Each mode (scripted, live) keeps its last
 * run and the latest result of every certification (a run with --only updates only those), so
 * `cal inspect` can say whether that CLI version is certified.
 */

export const CERTIFICATION_SCHEMA_VERSION = 1;

const StoredOutcome = z.object({
  id: z.string(),
  priority: z.enum(['P0', 'P1']),
  capability: z.string(),
  result: z.enum(['pass', 'fail', 'skip']),
  durationMs: z.number().nonnegative(),
  evidence: z.string(),
  failure: z.string().nullable(),
  /** When this result was observed (the run's end). */
  at: z.string(),
});
export type StoredOutcome = z.infer<typeof StoredOutcome>;

const StoredRun = z.object({
  startedAt: z.string(),
  finishedAt: z.string(),
  durationMs: z.number().nonnegative(),
  calVersion: z.string(),
  cliRealPath: z.string(),
  only: z.array(z.string()).nullable(),
  passed: z.boolean(),
  counts: z.object({ pass: z.number(), fail: z.number(), skip: z.number() }),
});

const ModeRecord = z.object({
  lastRun: StoredRun,
  results: z.record(z.string(), StoredOutcome),
});

export const CertificationFile = z.object({
  schemaVersion: z.literal(CERTIFICATION_SCHEMA_VERSION),
  provider: z.string(),
  version: z.string(),
  modes: z.object({ scripted: ModeRecord.optional(), live: ModeRecord.optional() }),
});
export type CertificationFile = z.infer<typeof CertificationFile>;

const SAFE_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._+-]*$/;

export function certificationsDir(stateRoot: string): string {
  return path.join(stateRoot, 'certifications');
}

export function certificationFile(stateRoot: string, provider: string, version: string): string {
  if (!SAFE_SEGMENT.test(provider) || !SAFE_SEGMENT.test(version)) throw new CalError('usage', `unsafe certification file name for ${provider} ${version}`);
  return path.join(certificationsDir(stateRoot), provider, `${version}.json`);
}

/** Merges a run into the provider/version file (atomic write, 0600, in 0700 folders). */
export async function saveCertification(stateRoot: string, report: CertifyReport): Promise<string> {
  const file = certificationFile(stateRoot, report.provider, report.cli.version);
  await ensurePrivateDir(certificationsDir(stateRoot));
  await ensurePrivateDir(path.dirname(file));
  const read = await readJsonFile(file, CertificationFile);
  const current: CertificationFile = read.ok ? read.value : { schemaVersion: CERTIFICATION_SCHEMA_VERSION, provider: report.provider, version: report.cli.version, modes: {} };
  const previous = current.modes[report.mode]?.results ?? {};
  const results: Record<string, StoredOutcome> = { ...previous };
  for (const o of report.outcomes) results[o.id] = { ...o, at: report.finishedAt };
  const next: CertificationFile = CertificationFile.parse({
    ...current,
    modes: {
      ...current.modes,
      [report.mode]: {
        lastRun: {
          startedAt: report.startedAt,
          finishedAt: report.finishedAt,
          durationMs: report.durationMs,
          calVersion: calVersion(),
          cliRealPath: report.cli.realPath,
          only: report.only,
          passed: report.passed,
          counts: report.counts,
        },
        results,
      },
    },
  });
  await writeJsonAtomic(file, next);
  return file;
}

/** One line of `cal inspect`: where a provider's CLI version stands, per mode. */
export interface CertificationSummary {
  provider: string;
  version: string;
  mode: 'scripted' | 'live';
  /** Every registered certification is on record and none failed (skipped: not applicable). */
  certified: boolean;
  pass: number;
  fail: number;
  skip: number;
  failing: string[];
  /** Registered certifications with no result on record yet (runs with --only). */
  missing: string[];
  lastRunAt: string;
  file: string;
}

/** Every stored certification result; unreadable files are skipped (they are never rewritten). */
export async function listCertifications(stateRoot: string): Promise<CertificationSummary[]> {
  const out: CertificationSummary[] = [];
  const root = certificationsDir(stateRoot);
  let providers: string[];
  try {
    providers = await fs.readdir(root);
  } catch {
    return out;
  }
  for (const provider of providers.sort()) {
    let files: string[];
    try {
      files = await fs.readdir(path.join(root, provider));
    } catch {
      continue;
    }
    for (const name of files.filter((f) => f.endsWith('.json')).sort()) {
      const file = path.join(root, provider, name);
      const read = await readJsonFile(file, CertificationFile);
      if (!read.ok) continue;
      for (const mode of ['scripted', 'live'] as const) {
        const record = read.value.modes[mode];
        if (!record) continue;
        const results = Object.values(record.results);
        const failing = results.filter((r) => r.result === 'fail').map((r) => r.id);
        const missing = certIds.filter((id) => !record.results[id]);
        out.push({
          provider: read.value.provider,
          version: read.value.version,
          mode,
          certified: failing.length === 0 && missing.length === 0 && results.some((r) => r.result === 'pass'),
          pass: results.filter((r) => r.result === 'pass').length,
          fail: failing.length,
          skip: results.filter((r) => r.result === 'skip').length,
          failing,
          missing,
          lastRunAt: record.lastRun.finishedAt,
          file,
        });
      }
    }
  }
  return out;
}

export async function readCertification(stateRoot: string, provider: string, version: string): Promise<CertificationFile | null> {
  const read = await readJsonFile(certificationFile(stateRoot, provider, version), CertificationFile);
  return read.ok ? read.value : null;
}
