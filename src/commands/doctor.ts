/**
 * `cal doctor`: which CLI providers, tmux and the state directory are usable here. Ready (exit 0)
 * when tmux and the state dir work and at least one CLI is usable (the rest are listed as
 * information); `--provider P` is strict: P must be usable too.
 */
import type { ProviderName } from '../handles/schema.js';
import { doctor, type DoctorReport } from '../sessions/doctor.js';
import { passThroughEnv, renderError } from './common.js';
import { defineCommand } from './spec.js';

/** The exit code when something asked for is not usable (documented in the README's exit codes). */
export const NOT_READY_EXIT = 18;

export const command = defineCommand({
  name: 'doctor',
  help: 'each provider: its CLI found or not, its version against the supported releases; tmux; the state dir',
  local: 'checks the CLIs, tmux and state directory of this machine',
  args: [],
  options: {
    provider: { value: '<name>', help: 'check this provider only (default: every CLI provider)' },
    json: { help: 'one JSON object on stdout' },
  },
  async run(_args, opts, global) {
    let report: DoctorReport;
    try {
      report = await doctor(passThroughEnv(), global.stateDir, opts.provider as ProviderName | undefined);
    } catch (err) {
      return renderError(err, { json: opts.json === true });
    }
    process.stdout.write(opts.json ? `${JSON.stringify(report, null, 2)}\n` : renderTable(report));
    return report.ready ? 0 : NOT_READY_EXIT;
  },
});

/** The human table: one row per provider, then tmux and the state dir, each with what to do. */
export function renderTable(report: DoctorReport): string {
  const rows: string[][] = [['provider', 'status', 'version', 'supported', 'where']];
  for (const p of report.providers) {
    const supported = p.floor && p.certified ? `${p.floor} – ${p.certified}` : 'uncertified here';
    rows.push([p.provider, p.status, p.version ?? '-', supported, p.path ?? '-']);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const lines = rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd());
  for (const p of report.providers) if (p.note) lines.push(`${p.provider}: ${p.note}`);
  lines.push('', `tmux       ${report.multiplexer.usable ? `ok ${report.multiplexer.version}` : `missing: ${report.multiplexer.note}`}`);
  lines.push(`state dir  ${report.stateDir.usable ? 'ok' : 'unusable'} ${report.stateDir.path}${report.stateDir.note ? `: ${report.stateDir.note}` : ''}`);
  const usable = report.providers.filter((p) => p.usable).length;
  const some = !report.strict && usable < report.providers.length;
  if (some && usable > 0) lines.push(`${report.providers.length - usable} of ${report.providers.length} CLIs not usable here (information: cal runs the ${usable} that are)`);
  if (report.ready) lines.push(some ? `ready (${usable} of ${report.providers.length} CLIs)` : 'ready');
  else lines.push(`not ready (exit ${NOT_READY_EXIT})${!report.strict && usable === 0 ? ': no CLI is usable' : ''}`);
  return `${lines.join('\n')}\n`;
}
