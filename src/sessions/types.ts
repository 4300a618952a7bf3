import type { TurnProgress } from '../adapters/types.js';
import type { AgentSessionHandle, ProviderName, Transport } from '../handles/schema.js';
import type { EventRecord } from '../state/store.js';
import type { TurnRecord, TurnStatus } from '../state/turns.js';

/** The agent-session layer's requests and views (what commands, the TUI and the library see). */
export interface StartRequest {
  provider: ProviderName;
  message: string;
  cwd?: string;
  model?: string;
  transport?: Transport;
  name?: string;
  /** A handle already holding `name` is removed (as `cal remove` would, refused while busy). */
  replace?: boolean;
  systemPrompt?: string;
  mcpConfig?: string;
  /** What the CLI may do without asking (handles/schema.ts toolPolicies); default `default`. */
  toolPolicy?: string;
  /** false: never trust the working folder on the user's behalf (`--no-trust`; kept on the handle). */
  trustWorkingDir?: boolean;
  cliPath?: string;
  /** Run the session in a new git worktree of the repository `cwd` is in (src/git/worktree.ts), on `branch` (default `cal/<name or id>`). */
  worktree?: { branch?: string };
  /** `--provider acp`: the agent's command line (adapters/acp-command.ts). */
  acpCommand?: string;
  timeoutSeconds?: number;
  env: Record<string, string>;
  onEvent?: (event: EventRecord) => void;
  onProgress?: (progress: TurnProgress) => void;
  onSent?: ExecOptions['onSent'];
  /** Tags the turn record, so durable work can find its turn again after a crash. */
  correlationId?: string;
  /** Called once the handle is saved, before anything is sent. */
  onHandle?: (handle: AgentSessionHandle) => Promise<void>;
  /** Cancels the call as Ctrl-C would: the turn is settled and the handle's lock released. */
  signal?: AbortSignal;
}

export interface ContinueRequest {
  ref: string;
  message: string;
  cwd?: string;
  model?: string;
  systemPrompt?: string;
  mcpConfig?: string;
  /** Expected tool policy (stale_handle naming toolPolicy if it differs). */
  toolPolicy?: string;
  /** Expected ACP command line (`--provider acp`): another is stale_handle. */
  acpCommand?: string;
  /** Expected transport: a handle on another one is non_applicable (a handle keeps its transport). */
  transport?: string;
  /** false: from this turn on, never trust the working folder on the user's behalf (`--no-trust`; recorded on the handle). */
  trustWorkingDir?: boolean;
  /** undefined: busy at once; a number of seconds (Infinity: forever) to wait in line. */
  waitSeconds?: number;
  timeoutSeconds?: number;
  env: Record<string, string>;
  onEvent?: (event: EventRecord) => void;
  onProgress?: (progress: TurnProgress) => void;
  onSent?: ExecOptions['onSent'];
  correlationId?: string;
  signal?: AbortSignal;
}

export interface TurnResult {
  handle: AgentSessionHandle;
  turn: TurnRecord;
}

/** A pane as people see it: commands and the TUI read these, never the transport fields. */
export interface PaneView {
  /** A label for people (tmux session and pane id). */
  label: string;
  current: boolean;
  alive: boolean;
  launch: 'fresh' | 'resume';
  startedAt: string;
  endedAt: string | null;
  endReason: string | null;
}

export interface HandleView {
  handle: AgentSessionHandle;
  panes: PaneView[];
  currentPaneAlive: boolean;
  turns: TurnRecord[];
  events: EventRecord[];
}

export interface RecoverRequest {
  /** Only this handle's turns (by id): `cal cancel` settling a turn whose cal died. */
  handle?: string;
  dryRun?: boolean;
  retryLost?: boolean;
  env: Record<string, string>;
  timeoutSeconds?: number;
  onEvent?: (event: EventRecord) => void;
  signal?: AbortSignal;
}

export type RecoverAction =
  | 'settled_from_transcript'
  | 'waited_for_cli'
  | 'marked_lost'
  | 'retried_lost'
  | 'delivered'
  | 'skipped_busy'
  | 'skipped_settled'
  /** A turn record that cannot be read (torn, corrupt, not a file): reported, left untouched. */
  | 'skipped_unreadable';

export interface RecoverItem {
  handle: string;
  turn: string;
  message: string;
  before: TurnStatus;
  action: RecoverAction;
  status: TurnStatus;
  answer: string | null;
  error?: string;
}

/**
 * What `cancel` did: `cancelled` (the owner interrupted the turn), `already_ended` (it ended
 * otherwise before the request took effect), `recovered` (its cal was gone: settled as recover
 * settles it) or `idle` (nothing in flight: nothing done).
 */
export interface CancelOutcome {
  handle: AgentSessionHandle;
  action: 'cancelled' | 'already_ended' | 'recovered' | 'idle';
  turn: TurnRecord | null;
  recovered: RecoverItem[];
}

export interface HandleSummary {
  handle: AgentSessionHandle;
  lastTurn: TurnRecord | null;
  /** Whether the session's current tmux pane is alive (false for one without a pane). */
  paneAlive: boolean;
}

/** What a turn needs of the caller beyond its record: environment, time limit and listeners. */
export interface ExecOptions {
  env: Record<string, string>;
  /** Once the turn is recorded and its message has left cal (library onSent). */
  onSent?: (sent: { handle: string; turn: string }) => void;
  timeoutSeconds?: number;
  onEvent?: (event: EventRecord) => void;
  onProgress?: (progress: TurnProgress) => void;
  signal?: AbortSignal;
  /** undefined: busy at once; seconds to wait in line for the handle (Infinity: forever). */
  waitSeconds?: number;
  /** false: the turn (and the handle, from now on) trusts no folder on the user's behalf. */
  trustWorkingDir?: boolean;
}
