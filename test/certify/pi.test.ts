import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scratchDir } from '../support/cal.js';
import { cliBin, pinnedCli } from '../support/clis.js';
import { matrixBin } from '../support/cli-matrix.js';
import { expectOutcomes, failures, runCertify } from './helpers.js';

/**
 * Issue 44: a Pi pane killed mid-turn is `lost`, whatever the release writes as it dies. Pi 1.x
 * catches the SIGHUP of a killed pane, aborts the running turn and records its reply with
 * stopReason `aborted` (what an Escape at the pane records) before it exits; 0.73.1 writes
 * nothing. The pinned 1.6.0 needs Node >= 22.19 on PATH (CI puts Node 22 first).
 */
const releases = [
  ['1.6.0 (pinned)', () => cliBin('pi')],
  ['0.73.1 (matrix)', () => matrixBin('pi', '0.73.1')],
] as const;

describe('cal certify --provider pi: a pane killed mid-turn', () => {
  let root: string;
  beforeAll(async () => {
    root = await scratchDir('certify-pi');
  });
  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it.each(releases)('Pi %s: CertKilledMidTurnSettles passes (the turn is lost, not interrupted)', async (name, bin) => {
    const state = path.join(root, name.split(' ')[0]!, 'state');
    const run = await runCertify(state, ['--provider', 'pi', '--cli-path', bin(), '--json', '--only', 'CertKilledMidTurnSettles']);
    expect(run.code, failures(run)).toBe(0);
    expectOutcomes(run, { pass: ['CertKilledMidTurnSettles'] });
    expect(run.results.CertKilledMidTurnSettles!.evidence).toMatch(/pane killed mid-turn: lost/);
  }, 300_000);

  it('the pinned Pi is 1.6.0', () => {
    expect(pinnedCli.pi.version).toBe('1.6.0');
  });
});
