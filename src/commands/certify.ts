import fs from 'node:fs/promises';
import path from 'node:path';
import { certIds, type CertId } from '../certify/types.js';
import { junitXml, modeLine, reportJson, summaryLine, tableHeader, tableRow } from '../certify/report.js';
import { saveCertification } from '../certify/results.js';
import { certify } from '../certify/runner.js';
import { CalError } from '../errors.js';
import type { ProviderName } from '../handles/schema.js';
import { StateStore } from '../state/store.js';
import { createProgress } from './progress.js';
import { passThroughEnv, renderError, type GlobalOptions } from './common.js';

export interface CertifyCommandOptions {
  provider: ProviderName;
  cliPath?: string;
  only?: string;
  live?: boolean;
  json?: boolean;
  junit?: string;
}

/**
 * `cal certify --provider <name>`: runs the certifications that apply to the provider's CLI
 * against the scripted model (or, with --live, the vendor's service), prints a table (or one
 * JSON object), optionally writes JUnit XML, and saves the results in the state directory.
 * Exit 0 only when every certification run passed; 15 (certification_failed) otherwise.
 *
 * Tuning for CI (environment): CAL_CERTIFY_JOBS (scenarios at a time, default 3),
 * CAL_CERTIFY_TURN_TIMEOUT (seconds per turn), CAL_CERTIFY_KEEP=1 (keep scratch folders).
 */
export async function runCertify(opts: CertifyCommandOptions, global: GlobalOptions): Promise<number> {
  try {
    const only = parseOnly(opts.only);
    const env = passThroughEnv();
    const jobs = positiveInt(env.CAL_CERTIFY_JOBS, 'CAL_CERTIFY_JOBS');
    const turnTimeoutSeconds = positiveInt(env.CAL_CERTIFY_TURN_TIMEOUT, 'CAL_CERTIFY_TURN_TIMEOUT');
    const store = await StateStore.open(global.stateDir);
    const progress = await createProgress({ json: opts.json, initial: 'certifying' });
    const out = (line: string) => {
      if (!opts.json) progress.printLine(line);
    };
    let planned = 0;
    let done = 0;
    const report = await certify({
      provider: opts.provider,
      cliPath: opts.cliPath,
      only,
      live: opts.live === true,
      env,
      jobs,
      turnTimeoutSeconds,
      keep: env.CAL_CERTIFY_KEEP === '1',
      onStart: ({ pinned, planned: toRun, skipped }) => {
        planned = toRun;
        out(`cal certify: ${opts.provider} ${pinned.version} (${pinned.realPath})`);
        out(modeLine(opts.live ? 'live' : 'scripted'));
        out(`${toRun} to run, ${skipped} skipped`);
        out(tableHeader());
        progress.setState(`certifying · 0 of ${toRun} done`);
      },
      onOutcome: (o) => {
        out(tableRow(o));
        if (o.result !== 'skip') done++;
        progress.setState(`certifying · ${done} of ${planned} done`);
      },
    }).finally(() => progress.stop());
    const savedTo = await saveCertification(store.layout.root, report);
    if (opts.junit) {
      const file = path.resolve(opts.junit);
      await fs.mkdir(path.dirname(file), { recursive: true });
      await fs.writeFile(file, junitXml(report), { mode: 0o644 });
    }
    const failure = report.passed
      ? null
      : new CalError('certification_failed', `${report.counts.fail} certification${report.counts.fail === 1 ? '' : 's'} failed for ${report.provider} ${report.cli.version}: ${report.outcomes.filter((o) => o.result === 'fail').map((o) => o.id).join(', ')}`);
    if (opts.json) {
      process.stdout.write(JSON.stringify({ ...reportJson(report, savedTo), ...(failure ? { error: failure.toJSON() } : {}) }) + '\n');
    } else {
      out(summaryLine(report));
      out(`saved: ${savedTo}`);
      if (opts.junit) out(`junit: ${path.resolve(opts.junit)}`);
      if (failure) process.stderr.write(`cal: ${failure.kind}: ${failure.message}\n`);
    }
    return failure ? failure.exitCode : 0;
  } catch (err) {
    return renderError(err, opts);
  }
}

function parseOnly(value: string | undefined): CertId[] | null {
  if (value === undefined) return null;
  const ids = value.split(',').map((s) => s.trim()).filter(Boolean);
  if (ids.length === 0) throw new CalError('usage', '--only takes a comma-separated list of certification ids');
  const unknown = ids.filter((id) => !(certIds as readonly string[]).includes(id));
  if (unknown.length > 0) throw new CalError('usage', `unknown certification id${unknown.length === 1 ? '' : 's'} ${unknown.join(', ')}; known: ${certIds.join(', ')}`);
  return [...new Set(ids)] as CertId[];
}

function positiveInt(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new CalError('usage', `${name} must be a positive whole number, not ${JSON.stringify(value)}`);
  return n;
}
