import type { Capabilities } from '../adapters/types.js';
import type { PinnedCli, ProviderName } from '../handles/schema.js';

/**
 * Certification: proof, against the real CLI binary, that one version of a CLI keeps the
 * continuation contract (design §1–§6). Every certification is a scenario that can fail: it
 * asserts on the model's request log and on cal's turn records, never on exit codes alone.
 */
export const certIds = [
  // launch and context
  'CertFreshLaunch',
  'CertStartupDialogsPreAnswered',
  'CertWorkingDirectory',
  'CertRuntimeContext',
  'CertResumeStartupPrompts',
  // turns
  'CertPromptPaste',
  'CertCompletionFromTranscript',
  'CertSlowToolNoFalseIdle',
  'CertFinalAnswerFidelity',
  'CertToolActivityRecorded',
  'CertFailedTurnSettles',
  'CertBusyInputPolicy',
  // continuation
  'CertHandleRoundTrip',
  'CertPasteIntoLivePane',
  'CertSessionContinuationAfterTmuxLoss',
  'CertNativeResumeOnlyLatestMessage',
  'CertNonContinuableError',
  'CertStableWorkingDir',
  'CertPinnedExecutable',
  'CertStructuredResume',
  'CertAcpResume',
  'CertNoHistoryReplayAfterRestart',
  // interruption
  'CertInterruptedTurnSettles',
  'CertInterruptKeepsResume',
  'CertKilledMidTurnSettles',
  // concurrency and hygiene
  'CertConcurrentContinuationBusy',
  'CertParallelIsolation',
  'CertCleanup',
] as const;

export type CertId = (typeof certIds)[number];

export type Capability = keyof Capabilities;

/** P0 blocks use of that CLI version; P1 is wider coverage. */
export type Priority = 'P0' | 'P1';

export type CertArea = 'launch and context' | 'turns' | 'continuation' | 'interruption' | 'concurrency and hygiene';

export type CertResult = 'pass' | 'fail' | 'skip';

export interface CertOutcome {
  id: CertId;
  priority: Priority;
  capability: Capability;
  result: CertResult;
  /** Wall time of the scenario in milliseconds (0 when skipped). */
  durationMs: number;
  /** What the scenario observed (passes and failures), or why it was skipped. */
  evidence: string;
  /** Why it failed (failures only). */
  failure: string | null;
}

/** Thrown by a scenario when an assertion does not hold. */
export class CertFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CertFailure';
  }
}

/** One `cal certify` run: every outcome, in registry order. */
export interface CertifyReport {
  provider: ProviderName;
  cli: PinnedCli;
  mode: 'scripted' | 'live';
  only: CertId[] | null;
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  outcomes: CertOutcome[];
  passed: boolean;
  counts: { pass: number; fail: number; skip: number };
}
