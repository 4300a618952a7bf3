import { promises as fs } from 'node:fs';
import path from 'node:path';
import { CertificationError, openSessions, type CertId, type CertifyResult } from '../index.js';
import { junitXml, modeLine, reportJson, summaryLine, tableHeader, tableRow } from '../certify/report.js';
import { checkCertIds } from '../library/sessions.js';
import { CalError } from '../errors.js';
import { createProgress } from './progress.js';
import { passThroughEnv, renderError } from './common.js';
import { defineCommand } from './spec.js';
import { providerNames } from '../handles/schema.js';

/**
 * `cal certify --provider <name>`: runs the certifications that apply to the provider's CLI
 * against the scripted model (or, with --live, the vendor's service), prints a table (or one
 * JSON object), optionally writes JUnit XML, and saves the results in the state directory.
 * Exit 0 only when every certification run passed; 15 (certification_failed) otherwise.
 *
 * Tuning for CI (environment): CAL_CERTIFY_JOBS (scenarios at a time, default 3),
 * CAL_CERTIFY_TURN_TIMEOUT (seconds per turn), CAL_CERTIFY_KEEP=1 (keep scratch folders).
 */
export const command = defineCommand({
  name: 'certify',
  help: "certify a CLI version against cal's continuation contract (scripted model by default; exit 15 when a certification fails)",
  local: 'certifies the CLI installed on this machine',
  args: [],
  options: {
    provider: { value: '<name>', help: 'which CLI', choices: providerNames, required: true },
    cliPath: { value: '<path>', help: 'the CLI executable to certify (default: found on PATH)' },
    only: { value: '<ids>', help: 'comma-separated certification ids to run (default: all that apply)' },
    live: { help: "run against the vendor's real service with your own credentials and CLI config" },
    json: { help: 'print one JSON object on stdout' },
    junit: { value: '<file>', help: 'also write the results as JUnit XML' },
  },
  async run(_args, opts, global) {
    try {
      const only = parseOnly(opts.only);
      const env = passThroughEnv();
      const jobs = positiveInt(env.CAL_CERTIFY_JOBS, 'CAL_CERTIFY_JOBS');
      const turnTimeoutSeconds = positiveInt(env.CAL_CERTIFY_TURN_TIMEOUT, 'CAL_CERTIFY_TURN_TIMEOUT');
      const sessions = await openSessions({ stateDir: global.stateDir, env });
      const progress = await createProgress({ json: opts.json, initial: 'certifying' });
      const out = (line: string) => {
        if (!opts.json) progress.printLine(line);
      };
      let planned = 0;
      let done = 0;
      let result: CertifyResult;
      let failure: CertificationError | null = null;
      try {
        result = await sessions.certify({
          provider: opts.provider,
          cliPath: opts.cliPath,
          ...(only ? { only } : {}),
          live: opts.live === true,
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
        });
      } catch (err) {
        if (!(err instanceof CertificationError)) throw err;
        failure = err;
        result = err.result;
      } finally {
        progress.stop();
      }
      const { report, savedTo } = result;
      if (opts.junit) {
        const file = path.resolve(opts.junit);
        await fs.mkdir(path.dirname(file), { recursive: true });
        await fs.writeFile(file, junitXml(report), { mode: 0o644 });
      }
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
  },
});

function parseOnly(value: string | undefined): CertId[] | null {
  if (value === undefined) return null;
  const ids = value.split(',').map((s) => s.trim()).filter(Boolean);
  if (ids.length === 0) throw new CalError('usage', '--only takes a comma-separated list of certification ids');
  return checkCertIds(ids);
}

function positiveInt(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new CalError('usage', `${name} must be a positive whole number, not ${JSON.stringify(value)}`);
  return n;
}
