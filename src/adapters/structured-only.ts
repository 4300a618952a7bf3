import { CalError } from '../errors.js';
import type { ToolActivity } from '../handles/tool-activity.js';
import type { CliAdapter, LaunchPlan, TranscriptBinding, TurnObservation, TurnObserver } from './types.js';

/**
 * What an adapter that has only the structured transport gives the parts of cal that read a
 * CLI's transcript (cal recover). Cursor keeps its chats in SQLite and Agy's documented
 * transcript has no end-of-turn record, so neither tells cal whether an unfinished turn's message
 * reached the CLI or how it ended. The observer therefore says "possibly received, not ended"
 * whatever it is fed: recover marks such a turn lost (`--retry-lost` sends it again) and never
 * sends a message a second time on a guess.
 */
export class UndecidableTurnObserver implements TurnObserver {
  readonly observation: TurnObservation = { phase: 'running', turnKey: null };
  readonly tools: ToolActivity[] = [];
  readonly partialAnswer = '';
  unknownRecords = 0;

  feed(_record: unknown): void {
    this.unknownRecords++;
  }
}

/** The tmux launch of a CLI cal drives only through its structured transport. */
export function noTmuxTransport(provider: string): never {
  throw new CalError(
    'usage',
    `${provider} has no tmux transport in cal (its on-disk transcript cannot prove a turn's end without the pane); use --transport structured`,
  );
}

/** The scripted-model environment of a CLI that cannot be pointed at a local model. */
export function noScriptedModel(provider: string, reason: string): never {
  throw new CalError('non_applicable', `${provider} cannot run against cal's scripted model: ${reason}`);
}

/**
 * The tmux half of a structured-only adapter: no pane to launch, no transcript to bind before the
 * first run's result names the session, and an observer that never decides a turn on a guess.
 */
export function structuredOnlyTmuxParts(
  provider: string,
): Pick<CliAdapter, 'launch' | 'bindTranscript' | 'observeTurn'> {
  return {
    launch: (): LaunchPlan => noTmuxTransport(provider),
    bindTranscript: async (): Promise<TranscriptBinding | null> => null,
    observeTurn: () => new UndecidableTurnObserver(),
  };
}
