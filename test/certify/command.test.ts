import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scratchDir } from '../support/cal.js';
import { cliSuite, type CliSuite } from '../support/cli-suite.js';
import { cliBin } from '../support/clis.js';
import { failures, runCertify } from './helpers.js';

describe('cal certify: usage and typed errors', () => {
  let root: string;
  let state: string;

  beforeAll(async () => {
    root = await scratchDir('certify-cmd');
    state = path.join(root, 'state');
  });

  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it('an unknown certification id is a usage error (2) that lists the known ones; nothing runs', async () => {
    const run = await runCertify(state, ['--provider', 'claude-code', '--cli-path', cliBin('claude'), '--only', 'CertFreshLaunch,CertNope']);
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toMatch(/^cal: usage: unknown certification id CertNope; known: CertFreshLaunch, .*CertCleanup$/);
    expect(run.stdout).toBe('');
  });

  it('an API provider has no CLI to certify (non_applicable, 8); a provider cal does not know is a usage error', async () => {
    const api = await runCertify(state, ['--provider', 'anthropic', '--json']);
    expect(api.code).toBe(8);
    expect(api.json.error.kind).toBe('non_applicable');
    // Every name --provider accepts has an adapter now (Gemini included), so the unknown case is a name.
    const unknown = await runCertify(state, ['--provider', 'nosuchcli']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trim()).toMatch(/^cal: usage: .*'nosuchcli' is invalid\. Allowed choices are claude-code, codex, gemini, pi, cursor, agy/);
  });

  it('a missing executable is cli_missing (13); a bad tuning variable is usage (2)', async () => {
    const missing = await runCertify(state, ['--provider', 'codex', '--cli-path', path.join(root, 'no-such-codex'), '--json']);
    expect(missing.code).toBe(13);
    expect(missing.json.error.kind).toBe('cli_missing');
    const jobs = await runCertify(state, ['--provider', 'codex', '--cli-path', cliBin('codex')], { CAL_CERTIFY_JOBS: 'many' });
    expect(jobs.code).toBe(2);
    expect(jobs.stderr).toMatch(/CAL_CERTIFY_JOBS must be a positive whole number/);
  });
});

/**
 * --live runs against "the vendor's real service" with the caller's own environment and CLI
 * config. Here the caller's environment points the CLI at a local scripted model standing in for
 * the vendor, which proves that live mode hands the user's own setup to the CLI (scripted mode
 * never would) and reports what it could not run there.
 */
describe('cal certify --live', () => {
  const suites: CliSuite[] = [];

  afterAll(async () => {
    for (const suite of suites) await suite.close();
  });

  it('Claude Code: uses the caller HOME and credentials, says LIVE, skips scripted-only certifications with the reason', async () => {
    const suite = await cliSuite('claude-code', { prefix: 'certify-live-claude' });
    suites.push(suite);
    const { server, state, env: userEnv } = suite;
    const before = server.turnRequests().length;
    const only = 'CertFreshLaunch,CertSessionContinuationAfterTmuxLoss,CertPromptPaste';
    const text = await runCertify(state, ['--provider', 'claude-code', '--cli-path', cliBin('claude'), '--live', '--only', only], userEnv);
    expect(text.code, text.stdout + text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^mode: LIVE - against the vendor's real service with your own credentials and CLI config/m);
    expect(text.stdout).toMatch(/^CertPromptPaste +P0 {2}skip +- {2}not run with --live: needs the scripted model/m);
    // The CLI talked to the caller's configured service, not to a model certify started.
    expect(server.turnRequests().length).toBeGreaterThan(before);
    const json = await runCertify(state, ['--provider', 'claude-code', '--cli-path', cliBin('claude'), '--live', '--only', 'CertFreshLaunch', '--json'], userEnv);
    expect(json.code, failures(json)).toBe(0);
    expect(json.json.mode).toBe('live');
    expect(json.results.CertFreshLaunch!.evidence).not.toMatch(/model saw/);
    const saved = JSON.parse(await fs.readFile(path.join(state, 'certifications', 'claude-code', `${json.json.cli.version}.json`), 'utf8'));
    expect(Object.keys(saved.modes)).toEqual(['live']);
  }, 300_000);

  it("Codex: the caller's own config.toml provider is used", async () => {
    const suite = await cliSuite('codex', { prefix: 'certify-live-codex' });
    suites.push(suite);
    const { server, state, env } = suite;
    const before = server.turnRequests().length;
    const run = await runCertify(state, ['--provider', 'codex', '--cli-path', cliBin('codex'), '--live', '--only', 'CertHandleRoundTrip,CertStructuredResume,CertSlowToolNoFalseIdle', '--json'], env);
    expect(run.code, failures(run)).toBe(0);
    expect(Object.fromEntries(Object.entries(run.results).map(([id, r]) => [id, r.result]))).toEqual({
      CertHandleRoundTrip: 'pass',
      CertStructuredResume: 'pass',
      CertSlowToolNoFalseIdle: 'skip',
    });
    expect(server.turnRequests().filter((r) => r.dialect === 'openai-responses').length).toBeGreaterThan(before);
  }, 300_000);
});
