import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isApiProvider, loadCliAdapter } from '../adapters/registry.js';
import { CalError } from '../errors.js';
import type { PinnedCli, ProviderName } from '../handles/schema.js';
import { ScenarioContext, errorText, type RunSettings } from './context.js';
import { planCertifications } from './registry.js';
import { redactor } from './report.js';
import { CertFailure, type CertId, type CertOutcome, type CertifyReport } from './types.js';

export type { CertifyReport } from './types.js';

export interface CertifyOptions {
  provider: ProviderName;
  cliPath?: string;
  only?: CertId[] | null;
  live: boolean;
  /** The user's environment (the CLI is found on its PATH; live mode passes all of it on). */
  env: Record<string, string>;
  /** Scenarios run at the same time (each in its own state, home, tmux server and model). */
  jobs?: number;
  turnTimeoutSeconds?: number;
  /** Keep each scenario's scratch folder (for debugging a failure). */
  keep?: boolean;
  /** Called once per certification, in registry order, as soon as its outcome is known. */
  onOutcome?: (outcome: CertOutcome) => void;
  /** Called once the CLI is resolved, before any scenario runs. */
  onStart?: (info: { pinned: PinnedCli; planned: number; skipped: number }) => void;
}

const DEFAULT_JOBS = 3;
const SCRIPTED_TURN_TIMEOUT_S = 60;
const LIVE_TURN_TIMEOUT_S = 300;

/**
 * Runs the certifications that apply to a provider's CLI. Each scenario gets a throwaway state
 * directory, CLI home and (by default) its own scripted model server; nothing is written to
 * the user's state or CLI config. Scenarios run a few at a time; outcomes come in registry order.
 */
export async function certify(opts: CertifyOptions): Promise<CertifyReport> {
  if (isApiProvider(opts.provider)) {
    throw new CalError('non_applicable', `${opts.provider} is an API provider: there is no CLI binary to certify`);
  }
  const adapter = await loadCliAdapter(opts.provider);
  if (!opts.live && adapter.liveCertificationOnly) {
    throw new CalError(
      'non_applicable',
      `${opts.provider} cannot be certified here: ${adapter.liveCertificationOnly}. Where the real CLI is installed and signed in, run: cal certify --provider ${opts.provider} --live`,
    );
  }
  const pinned = await adapter.resolveCli(opts.cliPath, opts.env);
  const settingsBase = {
    provider: opts.provider,
    cliPath: opts.cliPath ? path.resolve(opts.cliPath) : pinned.path,
    executable: adapter.executable,
    pinned,
    capabilities: adapter.capabilities,
    live: opts.live,
    userEnv: opts.env,
    turnTimeoutSeconds: opts.turnTimeoutSeconds ?? (opts.live ? LIVE_TURN_TIMEOUT_S : SCRIPTED_TURN_TIMEOUT_S),
  };
  const plan = planCertifications(opts.provider, adapter.capabilities, { live: opts.live, only: opts.only ?? null, acp: adapter.acp !== undefined });
  const toRun = plan.filter((p) => p.run).length;
  opts.onStart?.({ pinned, planned: toRun, skipped: plan.length - toRun });
  const redact = redactor(opts.env);
  const startedAt = new Date();
  const scratchRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'cal-certify-'));
  const settings: RunSettings = { ...settingsBase, scratchRoot };
  const outcomes: Array<CertOutcome | undefined> = new Array(plan.length);
  let reported = 0;
  const flush = () => {
    // The index moves outside the optional call: `f?.(x++)` skips `x++` when f is absent.
    while (reported < plan.length && outcomes[reported]) {
      const outcome = outcomes[reported++] as CertOutcome;
      opts.onOutcome?.(outcome);
    }
  };

  const jobs = Math.max(1, opts.live ? 1 : (opts.jobs ?? DEFAULT_JOBS));
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const index = next++;
      if (index >= plan.length) return;
      const item = plan[index]!;
      const base = { id: item.cert.id, priority: item.cert.priority, capability: item.cert.capability };
      if (!item.run) {
        outcomes[index] = { ...base, result: 'skip', durationMs: 0, evidence: item.reason, failure: null };
      } else {
        outcomes[index] = await runOne(item.cert.id, item.cert.run, settings, opts.keep ?? false, redact, base);
      }
      flush();
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(jobs, plan.length) || 1 }, worker));
  } finally {
    if (!opts.keep) await fs.rm(scratchRoot, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined);
  }
  flush();
  const done = outcomes as CertOutcome[];
  const counts = { pass: 0, fail: 0, skip: 0 };
  for (const o of done) counts[o.result]++;
  const finishedAt = new Date();
  return {
    provider: opts.provider,
    cli: pinned,
    mode: opts.live ? 'live' : 'scripted',
    only: opts.only ?? null,
    startedAt: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    durationMs: finishedAt.getTime() - startedAt.getTime(),
    outcomes: done,
    passed: counts.fail === 0,
    counts,
  };
}

async function runOne(
  id: CertId,
  run: (ctx: ScenarioContext) => Promise<void>,
  settings: RunSettings,
  keep: boolean,
  redact: (text: string) => string,
  base: Pick<CertOutcome, 'id' | 'priority' | 'capability'>,
): Promise<CertOutcome> {
  const started = Date.now();
  let ctx: ScenarioContext | null = null;
  // A scenario that hangs is a failure, not a hung certify: its panes are killed when it ends.
  const limitMs = Math.max(180_000, settings.turnTimeoutSeconds * 4 * 1000);
  let timer: NodeJS.Timeout | undefined;
  try {
    ctx = await ScenarioContext.create(id, settings);
    const scenario = ctx;
    await Promise.race([
      run(scenario),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new CertFailure(`the scenario did not finish within ${Math.round(limitMs / 1000)}s`)), limitMs);
      }),
    ]);
    return { ...base, result: 'pass', durationMs: Date.now() - started, evidence: redact(scenario.notes.join('; ')), failure: null };
  } catch (err) {
    const failure = err instanceof CertFailure ? err.message : `unexpected error: ${errorText(err)}`;
    const seen = ctx?.notes.length ? ` (seen so far: ${ctx.notes.join('; ')})` : '';
    return { ...base, result: 'fail', durationMs: Date.now() - started, evidence: redact(`${failure}${seen}`), failure: redact(failure) };
  } finally {
    clearTimeout(timer);
    if (ctx) await ctx.dispose(keep);
  }
}
