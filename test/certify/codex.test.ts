import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codexAdapter } from '../../src/adapters/codex/index.js';
import { CertificationFile } from '../../src/certify/results.js';
import { certIds } from '../../src/certify/types.js';
import { runCal, scratchDir } from '../support/cal.js';
import { cliBin, pinnedCli } from '../support/clis.js';
import { expectNoSecret, expectOutcomes, failures, runCertify } from './helpers.js';
import { brokenWrapper } from './wrappers.js';

/**
 * Issue 8 acceptance for Codex 0.169.0: `cal certify` against the real pinned binary passes
 * (tmux and structured transports), and against deliberately broken wrappers of the same native
 * binary the right certifications fail.
 */
const provider = 'codex';
const version = pinnedCli.codex.version;
const BROKEN_ENV = { CAL_CERTIFY_TURN_TIMEOUT: '20' };

describe('cal certify --provider codex', () => {
  let root: string;
  let native: string;

  beforeAll(async () => {
    root = await scratchDir('certify-codex');
    native = (await codexAdapter.resolveCli(cliBin('codex'), { PATH: process.env.PATH ?? '' })).realPath;
  });

  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it('the pinned binary passes every certification that applies (both transports); results saved and shown by inspect; no secret anywhere', async () => {
    const state = path.join(root, 'healthy', 'state');
    const junit = path.join(root, 'healthy', 'junit.xml');
    const run = await runCertify(state, ['--provider', provider, '--cli-path', cliBin('codex'), '--json', '--junit', junit]);
    expect(run.code, failures(run)).toBe(0);
    expect(run.json).toMatchObject({ provider, mode: 'scripted', passed: true, cli: { version, realPath: native } });
    expect(Object.keys(run.results)).toEqual([...certIds]);
    expectOutcomes(run, { pass: certIds.filter((id) => id !== 'CertStableWorkingDir' && id !== 'CertAcpResume'), skip: ['CertStableWorkingDir', 'CertAcpResume'] });
    expect(run.results.CertStableWorkingDir!.evidence).toMatch(/codex does not claim needsStableWorkingDir/);
    expect(run.results.CertStructuredResume!.evidence).toMatch(/^structured: two resumes of native id/);
    const xml = await fs.readFile(junit, 'utf8');
    expect(xml).toMatch(/<testsuite name="cal certify codex 0\.169\.0 \(scripted\)" tests="28" failures="0" errors="0" skipped="2"/);
    const saved = path.join(state, 'certifications', provider, `${version}.json`);
    const file = CertificationFile.parse(JSON.parse(await fs.readFile(saved, 'utf8')));
    expect(file.modes.scripted?.lastRun).toMatchObject({ passed: true, cliRealPath: native });
    await expectNoSecret(run, [junit, saved]);
    const inspect = await runCal(['--state-dir', state, 'inspect', '--json']);
    expect(inspect.json.certifications).toEqual([expect.objectContaining({ provider, version, mode: 'scripted', certified: true })]);
  }, 600_000);

  describe('against broken wrappers of the real binary, the right certifications fail', () => {
    it('a CLI that drops the resume and starts fresh fails the resume certifications of both transports', async () => {
      const state = path.join(root, 'drop', 'state');
      const wrapper = await brokenWrapper(path.join(root, 'drop', 'bin'), 'codex', native, 'drop-resume');
      const run = await runCertify(
        state,
        ['--provider', provider, '--cli-path', wrapper, '--json', '--only', 'CertFreshLaunch,CertPasteIntoLivePane,CertSessionContinuationAfterTmuxLoss,CertNativeResumeOnlyLatestMessage,CertStructuredResume'],
        BROKEN_ENV,
      );
      expect(run.code).toBe(15);
      expect(run.json.cli.realPath).toBe(wrapper);
      expectOutcomes(run, {
        pass: ['CertFreshLaunch', 'CertPasteIntoLivePane'],
        fail: ['CertSessionContinuationAfterTmuxLoss', 'CertNativeResumeOnlyLatestMessage', 'CertStructuredResume'],
      });
      expect(run.results.CertStructuredResume!.failure).toMatch(/native id changed|recall answer/);
    }, 300_000);

    it('a CLI that replays the whole history on resume fails CertNativeResumeOnlyLatestMessage', async () => {
      const state = path.join(root, 'replay', 'state');
      const wrapper = await brokenWrapper(path.join(root, 'replay', 'bin'), 'codex', native, 'replay');
      const run = await runCertify(state, ['--provider', provider, '--cli-path', wrapper, '--json', '--only', 'CertFreshLaunch,CertPasteIntoLivePane,CertNativeResumeOnlyLatestMessage'], BROKEN_ENV);
      expect(run.code).toBe(15);
      expectOutcomes(run, { pass: ['CertFreshLaunch', 'CertPasteIntoLivePane'], fail: ['CertNativeResumeOnlyLatestMessage'] });
      expect(run.results.CertNativeResumeOnlyLatestMessage!.failure).toMatch(/as the new message, expected only/);
    }, 300_000);

    it('a CLI that exits mid-turn fails CertSlowToolNoFalseIdle with a lost turn', async () => {
      const state = path.join(root, 'exit', 'state');
      const bin = path.join(root, 'exit', 'bin');
      const wrapper = await brokenWrapper(bin, 'codex', native, 'exit-mid-turn');
      const run = await runCertify(state, ['--provider', provider, '--cli-path', wrapper, '--json', '--only', 'CertFreshLaunch,CertWorkingDirectory,CertSlowToolNoFalseIdle'], BROKEN_ENV);
      expect(run.code).toBe(15);
      expectOutcomes(run, { pass: ['CertFreshLaunch', 'CertWorkingDirectory'], fail: ['CertSlowToolNoFalseIdle'] });
      expect(run.results.CertSlowToolNoFalseIdle!.failure).toMatch(/ended lost/);
      expect(await fs.readFile(path.join(bin, 'exited-mid-turn'), 'utf8')).not.toBe('');
    }, 300_000);
  });
});
