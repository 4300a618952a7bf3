import type { CertifyReport } from './types.js';
import type { CertOutcome } from './types.js';

/**
 * Rendering of certification results: the table for people, one JSON object for scripts and a
 * JUnit XML file for CI. Nothing here prints a secret: evidence and failures pass through
 * `redactor` (values of the environment's keys, tokens and passwords) before they are kept.
 */

const SECRET_NAME = /(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION)/i;

/** Replaces the value of every secret-looking environment variable with [redacted]. */
export function redactor(env: Record<string, string>): (text: string) => string {
  const secrets = Object.entries(env)
    .filter(([name, value]) => SECRET_NAME.test(name) && value.length >= 6)
    .map(([, value]) => value)
    .sort((a, b) => b.length - a.length);
  return (text) => {
    let out = text;
    for (const secret of secrets) out = out.split(secret).join('[redacted]');
    return out;
  };
}

export function modeLine(mode: 'scripted' | 'live'): string {
  return mode === 'live'
    ? "mode: LIVE - against the vendor's real service with your own credentials and CLI config (this uses your account)"
    : 'mode: scripted model on 127.0.0.1 (offline: throwaway CLI homes and state, no key, no network)';
}

const ID_WIDTH = 38;

export function tableHeader(): string {
  return `${'ID'.padEnd(ID_WIDTH)} ${'PRI'.padEnd(3)} ${'RESULT'.padEnd(6)} ${'TIME'.padStart(7)}  EVIDENCE`;
}

export function tableRow(o: CertOutcome): string {
  const result = o.result === 'fail' ? 'FAIL' : o.result;
  const time = o.result === 'skip' ? '-' : `${(o.durationMs / 1000).toFixed(1)}s`;
  return `${o.id.padEnd(ID_WIDTH)} ${o.priority.padEnd(3)} ${result.padEnd(6)} ${time.padStart(7)}  ${o.evidence}`;
}

export function summaryLine(report: CertifyReport): string {
  const { pass, fail, skip } = report.counts;
  const verdict = report.passed ? 'CERTIFIED' : 'NOT CERTIFIED';
  const p0 = report.outcomes.filter((o) => o.result === 'fail' && o.priority === 'P0').length;
  const scope = report.only ? ` (only ${report.only.length} selected)` : '';
  return `${verdict}: ${report.provider} ${report.cli.version}${scope}: ${pass} passed, ${fail} failed${fail ? ` (${p0} P0)` : ''}, ${skip} skipped in ${(report.durationMs / 1000).toFixed(1)}s`;
}

export function reportJson(report: CertifyReport, savedTo: string | null): Record<string, unknown> {
  return {
    provider: report.provider,
    cli: { version: report.cli.version, path: report.cli.path, realPath: report.cli.realPath },
    mode: report.mode,
    only: report.only,
    passed: report.passed,
    counts: report.counts,
    startedAt: report.startedAt,
    finishedAt: report.finishedAt,
    durationMs: report.durationMs,
    results: report.outcomes,
    savedTo,
  };
}

function xml(text: string): string {
  return text
    // Characters XML 1.0 cannot carry at all.
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '�')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

const seconds = (ms: number) => (ms / 1000).toFixed(3);

/** A JUnit XML document: one suite for the run, one test case per certification. */
export function junitXml(report: CertifyReport): string {
  const suite = `cal certify ${report.provider} ${report.cli.version} (${report.mode})`;
  const cases = report.outcomes.map((o) => {
    const open = `    <testcase classname="cal.certify.${xml(report.provider)}" name="${xml(`${o.id} [${o.priority}]`)}" time="${seconds(o.durationMs)}">`;
    const body: string[] = [];
    if (o.result === 'fail') body.push(`      <failure message="${xml(o.failure ?? 'failed')}" type="CertFailure">${xml(o.evidence)}</failure>`);
    if (o.result === 'skip') body.push(`      <skipped message="${xml(o.evidence)}"/>`);
    if (o.result === 'pass') body.push(`      <system-out>${xml(o.evidence)}</system-out>`);
    return [open, ...body, '    </testcase>'].join('\n');
  });
  const props: Array<[string, string]> = [
    ['provider', report.provider],
    ['cliVersion', report.cli.version],
    ['mode', report.mode],
  ];
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="cal certify" tests="${report.outcomes.length}" failures="${report.counts.fail}" errors="0" skipped="${report.counts.skip}" time="${seconds(report.durationMs)}">`,
    `  <testsuite name="${xml(suite)}" tests="${report.outcomes.length}" failures="${report.counts.fail}" errors="0" skipped="${report.counts.skip}" time="${seconds(report.durationMs)}" timestamp="${xml(report.startedAt)}">`,
    '    <properties>',
    ...props.map(([name, value]) => `      <property name="${xml(name)}" value="${xml(value)}"/>`),
    '    </properties>',
    ...cases,
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}
