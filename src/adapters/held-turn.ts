import { earlyLaunchUnused, fileStamp, sameLaunch, takeEarlyLaunch } from './early-launch.js';
import { startJsonlProcess, type HeldJsonlProcess, type JsonlLaunch } from './structured-process.js';
import type { StartedStructuredTurn, StructuredRunRequest, StructuredStartRequest, StructuredTurnResult } from './types.js';

/**
 * StructuredTransport.start for a CLI that reads its message from stdin after its own start-up
 * (Claude Code's `-p`, Codex's `exec resume -`): the resumed turn's CLI, started before cal's
 * bookkeeping (or taken from cal's entry, early-launch.ts). The turn uses it only for the same
 * launch, an unchanged transcript and a message `takes` accepts; anything else (another turn ran
 * meanwhile, the handle changed) discards it unsent and launches afresh.
 */
export function startHeldTurn(
  req: StructuredStartRequest,
  launchOf: (req: StructuredStartRequest, sessionId: string) => JsonlLaunch,
  runTurn: (run: StructuredRunRequest, held?: HeldJsonlProcess) => Promise<StructuredTurnResult>,
  takes: (run: StructuredRunRequest) => boolean = () => true,
): StartedStructuredTurn | null {
  if (req.mode !== 'resume' || !req.sessionId) return null;
  const sessionId = req.sessionId;
  const launch = launchOf(req, sessionId);
  // The same launch, started by cal's entry before its modules loaded, with the transcript's
  // stamp from just before that start.
  const early = takeEarlyLaunch(launch, req.knownTranscript ?? null);
  const before = early ? early.stamp : fileStamp(req.knownTranscript);
  const held = startJsonlProcess(launch, early?.spawned);
  return {
    discard: () => held.discard(),
    run(run) {
      const same =
        held.waiting &&
        takes(run) &&
        run.mode === 'resume' &&
        run.sessionId === sessionId &&
        run.knownTranscript === req.knownTranscript &&
        sameLaunch(launch, launchOf(run, sessionId)) &&
        fileStamp(run.knownTranscript) === before;
      if (same) return runTurn(run, held);
      earlyLaunchUnused(fileStamp(run.knownTranscript) === before ? 'the turn differs' : 'the transcript changed since its start');
      held.discard();
      return runTurn(run);
    },
  };
}
