import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { certIds } from '../../src/certify/types.js';
import { CertificationFile } from '../../src/certify/results.js';
import { runCal, scratchDir } from '../support/cal.js';
import { cliBin, pinnedCli } from '../support/clis.js';
import { expectNoSecret, expectOutcomes, failures, runCertify } from './helpers.js';
import { brokenWrapper } from './wrappers.js';

/**
 * Issue 8 acceptance for Claude Code: `cal certify` against the real pinned binary passes, and
 * against deliberately broken wrappers of that same binary the right certifications fail.
 */
const provider = 'claude-code';
const version = pinnedCli.claude.version;
/** Broken runs wait for turns that never come: keep that wait short. */
const BROKEN_ENV = { CAL_CERTIFY_TURN_TIMEOUT: '20' };

describe('cal certify --provider claude-code', () => {
  let root: string;

  beforeAll(async () => {
    root = await scratchDir('certify-claude');
  });

  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it('the pinned binary passes every certification that applies; JSON, JUnit, the state directory and inspect agree; no secret anywhere', async () => {
    const state = path.join(root, 'healthy', 'state');
    const junit = path.join(root, 'healthy', 'junit.xml');
    const run = await runCertify(state, ['--provider', provider, '--cli-path', cliBin('claude'), '--json', '--junit', junit]);
    expect(run.code, failures(run)).toBe(0);
    expect(run.json).toMatchObject({ provider, mode: 'scripted', passed: true, cli: { version }, counts: { pass: certIds.length - 1, fail: 0, skip: 1 } });
    expect(Object.keys(run.results)).toEqual([...certIds]);
    // Claude Code has no ACP mode in cal (its ACP is a separate adapter program).
    expectOutcomes(run, { pass: certIds.filter((id) => id !== 'CertAcpResume'), skip: ['CertAcpResume'] });
    expect(run.results.CertStructuredResume!.evidence).toMatch(/^structured: two resumes of native id/);
    for (const r of Object.values(run.results)) if (r.result === 'pass') expect(r.evidence.length).toBeGreaterThan(20);
    expect(run.results.CertFreshLaunch!.evidence).toMatch(/model saw 1 user message/);

    const xml = await fs.readFile(junit, 'utf8');
    expect(xml).toMatch(/<testsuite name="cal certify claude-code 2\.1\.328 \(scripted\)" tests="28" failures="0" errors="0" skipped="1"/);
    expect(xml.match(/<testcase /g)).toHaveLength(28);

    const saved = path.join(state, 'certifications', provider, `${version}.json`);
    expect(run.json.savedTo).toBe(saved);
    const file = CertificationFile.parse(JSON.parse(await fs.readFile(saved, 'utf8')));
    expect(file.modes.scripted?.lastRun).toMatchObject({ passed: true, counts: { pass: 27, fail: 0, skip: 1 } });
    await expectNoSecret(run, [junit, saved]);

    const inspect = await runCal(['--state-dir', state, 'inspect', '--json']);
    expect(inspect.json.certifications).toEqual([expect.objectContaining({ provider, version, mode: 'scripted', certified: true, pass: 27, fail: 0, skip: 1 })]);
    const text = await runCal(['--state-dir', state, 'inspect']);
    expect(text.stdout).toMatch(/^certifications\n {2}claude-code 2\.1\.328: scripted: yes \(27 pass, /m);
  }, 600_000);

  it('the table says what ran against what, one row per certification, and exit 15 names the failures', async () => {
    const state = path.join(root, 'table', 'state');
    const wrapper = await brokenWrapper(path.join(root, 'table', 'bin'), 'claude', cliBin('claude'), 'exit-mid-turn');
    const run = await runCertify(state, ['--provider', provider, '--cli-path', wrapper, '--only', 'CertSlowToolNoFalseIdle,CertStructuredResume,CertFreshLaunch'], BROKEN_ENV);
    expect(run.code).toBe(15);
    const lines = run.stdout.split('\n');
    expect(lines[0]).toBe(`cal certify: claude-code ${version} (${wrapper})`);
    expect(lines[1]).toMatch(/^mode: scripted model on 127\.0\.0\.1 \(offline/);
    expect(lines[3]).toMatch(/^ID +PRI RESULT +TIME {2}EVIDENCE$/);
    expect(lines[4]).toMatch(/^CertFreshLaunch +P0 {2}pass +\d+\.\ds {2}model saw 1 user message/);
    expect(lines[5]).toMatch(/^CertSlowToolNoFalseIdle +P0 {2}FAIL +\d+\.\ds {2}continue ".*" ended lost/);
    // The structured transport runs no slow tool: the wrapper never ends it.
    expect(lines[6]).toMatch(/^CertStructuredResume +P0 {2}pass +\d+\.\ds {2}structured: two resumes of native id/);
    expect(run.stdout).toMatch(/^NOT CERTIFIED: claude-code 2\.1\.328 \(only 3 selected\): 2 passed, 1 failed \(1 P0\), 0 skipped in /m);
    expect(run.stderr.trim()).toBe('cal: certification_failed: 1 certification failed for claude-code 2.1.328: CertSlowToolNoFalseIdle');
  }, 300_000);

  describe('against broken wrappers of the real binary, the right certifications fail', () => {
    it('a CLI that drops the resume flag and starts fresh fails every native-resume certification, and only those', async () => {
      const state = path.join(root, 'drop', 'state');
      const wrapper = await brokenWrapper(path.join(root, 'drop', 'bin'), 'claude', cliBin('claude'), 'drop-resume');
      const run = await runCertify(
        state,
        ['--provider', provider, '--cli-path', wrapper, '--json', '--only', 'CertFreshLaunch,CertPasteIntoLivePane,CertSessionContinuationAfterTmuxLoss,CertNativeResumeOnlyLatestMessage,CertPinnedExecutable,CertStructuredResume'],
        BROKEN_ENV,
      );
      expect(run.code).toBe(15);
      expect(run.json.error.kind).toBe('certification_failed');
      expectOutcomes(run, {
        pass: ['CertFreshLaunch', 'CertPasteIntoLivePane'],
        fail: ['CertSessionContinuationAfterTmuxLoss', 'CertNativeResumeOnlyLatestMessage', 'CertPinnedExecutable', 'CertStructuredResume'],
      });
      expect(run.results.CertStructuredResume!.failure).toMatch(/native id changed|recall answer/);
    }, 300_000);

    it('a CLI that replays the whole history on resume fails CertNativeResumeOnlyLatestMessage', async () => {
      const state = path.join(root, 'replay', 'state');
      const wrapper = await brokenWrapper(path.join(root, 'replay', 'bin'), 'claude', cliBin('claude'), 'replay');
      const run = await runCertify(state, ['--provider', provider, '--cli-path', wrapper, '--json', '--only', 'CertFreshLaunch,CertPasteIntoLivePane,CertNativeResumeOnlyLatestMessage'], BROKEN_ENV);
      expect(run.code).toBe(15);
      expectOutcomes(run, { pass: ['CertFreshLaunch', 'CertPasteIntoLivePane'], fail: ['CertNativeResumeOnlyLatestMessage'] });
      expect(run.results.CertNativeResumeOnlyLatestMessage!.failure).toMatch(/as the new message, expected only/);
    }, 300_000);

    it('a CLI that exits mid-turn fails CertSlowToolNoFalseIdle with a lost turn', async () => {
      const state = path.join(root, 'exit', 'state');
      const bin = path.join(root, 'exit', 'bin');
      const wrapper = await brokenWrapper(bin, 'claude', cliBin('claude'), 'exit-mid-turn');
      const run = await runCertify(state, ['--provider', provider, '--cli-path', wrapper, '--json', '--only', 'CertFreshLaunch,CertWorkingDirectory,CertSlowToolNoFalseIdle'], BROKEN_ENV);
      expect(run.code).toBe(15);
      expectOutcomes(run, { pass: ['CertFreshLaunch', 'CertWorkingDirectory'], fail: ['CertSlowToolNoFalseIdle'] });
      expect(run.results.CertSlowToolNoFalseIdle!.failure).toMatch(/ended lost/);
      expect((await fs.readFile(path.join(bin, 'exited-mid-turn'), 'utf8')).trim().split('\n')).toHaveLength(1);
    }, 300_000);
  });
});
