import type { CliAdapter, SessionConfig, StartedStructuredTurn, TurnProgress } from '../adapters/types.js';
import type { PaneRecord, ProviderHandle, StabilityFingerprint } from '../handles/schema.js';
import type { ToolActivity } from '../handles/tool-activity.js';
import type { RequestedConfig } from './stability.js';
import type { TmuxFactory } from './tmux-control.js';

/**
 * The provider-level engine's vocabulary (design §4, §5): one `TurnRequest` goes in, one
 * `TurnOutcome` (plus the provider handle as it now stands) comes out.
 */
export type ProviderEvent = 'resuming' | 'running' | 'completed' | 'failed' | 'lost_tmux' | 'resume_unavailable' | 'stale_handle' | 'interrupted' | 'lost' | 'retrying' | 'draft_cleared';

export interface TurnOutcome {
  status: 'completed' | 'failed' | 'interrupted' | 'lost';
  answer: string | null;
  error: string | null;
  turnKey: string | null;
  tools: ToolActivity[];
}

export interface PaneChange {
  added?: PaneRecord;
  archived?: { paneId: string; reason: string };
}

export interface EngineHooks {
  emit(event: ProviderEvent, detail?: Record<string, unknown>): Promise<void>;
  /** Called right before the message leaves cal (turn status `sending`). */
  onSending(): Promise<void>;
  /** Called once the message has left cal (pasted, or handed to a launch). */
  onSent?(): Promise<void>;
  /** Called right after a pane was created, before it is recorded on the handle. */
  onPaneLaunched?(): Promise<void>;
  /**
   * Called once the CLI recorded our message (turn status `running`, with the CLI's key). The tmux
   * transport skips it when the same read of the transcript held the turn's end too.
   */
  onRecorded(turnKey: string | null): Promise<void>;
  /** Called whenever the provider handle changed and must be saved (pane, id, offset). */
  onHandleChanged(handle: ProviderHandle, panes: PaneChange): Promise<void>;
  /** Partial progress for --stream. */
  onProgress?(progress: TurnProgress): void;
}

/**
 * What the caller wants done with the message:
 * - `deliver`: send it to the session (the engine decides paste, launch, resume or refusal);
 * - `await`: the message already left cal earlier (a cal that died mid-turn): follow the CLI's
 *   record of it without sending anything.
 */
export type TurnIntent = { kind: 'deliver' } | { kind: 'await'; sentAt: Date };

export interface TurnRequest {
  adapter: CliAdapter;
  handle: ProviderHandle;
  config: SessionConfig;
  message: string;
  intent: TurnIntent;
  /** The user's environment, passed through to the CLI. */
  env: Record<string, string>;
  timeoutMs: number;
  hooks: EngineHooks;
  /**
   * Opens tmux on a socket (a fake in unit tests). A pane is always reached on the server it was
   * created on (its recorded socket); new panes go to `tmuxSocket`.
   */
  tmux: TmuxFactory;
  /** cal's own tmux socket for this state directory. */
  tmuxSocket: string;
  /** tmux session name for a new pane (unique per handle and launch). */
  paneName: string;
  /** A private folder cal owns for this session (per-session files an adapter may need). */
  sessionDir?: string;
  /** Cancels the turn as Ctrl-C would: the CLI is interrupted and the turn settled. */
  signal?: AbortSignal;
  /** The stability check of design §4 row 2: the fingerprint recorded at start, and the request. */
  stability?: { recorded: StabilityFingerprint; requested: RequestedConfig };
  /** A structured turn's CLI started before the turn's bookkeeping (startStructuredTurn), if any. */
  started?: StartedStructuredTurn | null;
}

export interface EngineResult {
  handle: ProviderHandle;
  outcome: TurnOutcome;
}
