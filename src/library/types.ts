import type { ErrorKind } from '../errors.js';
import type { AgentSessionHandle, ProviderName, ToolPolicy, Transport } from '../handles/schema.js';
import type { CancelOutcome, HandleSummary, HandleView, PaneView, RecoverAction, RecoverItem } from '../sessions/agent-sessions.js';
import type { CertificationSummary } from '../certify/results.js';
import type { certify as runCertifications } from '../certify/runner.js';
import type { ToolActivity, TurnRecord, TurnStatus } from '../state/turns.js';

/**
 * The public types of `coding-agent-loop`. They name the records cal already keeps (handles,
 * turns, events) rather than copying them, so the library cannot describe a different shape
 * than the one written to disk.
 */

export type { ErrorKind, ProviderName, ToolPolicy, Transport, TurnStatus, ToolActivity, PaneView, HandleSummary, HandleView, RecoverAction, RecoverItem, CertificationSummary };

/** An agent session handle as stored in the state directory (design §3); through a fleet, with the host that owns it. */
export type Handle = AgentSessionHandle & { host?: string };

/** One turn record (design §5): written before anything is sent, settled exactly once. */
export type Turn = TurnRecord;

/** A handle id, a handle name, or a handle itself. */
export type HandleRef = string | { readonly id: string };

/** Every lifecycle event cal records in a handle's event log. */
export const eventKinds = [
  // provider level (design §4)
  'resuming',
  'running',
  'completed',
  'failed',
  'interrupted',
  'lost',
  'lost_tmux',
  'resume_unavailable',
  'stale_handle',
  /** The CLI retries a failing model request (attempt, maxRetries, delayMs, errorStatus). */
  'retrying',
  /** A draft a person left in the pane's input box was cleared before cal's paste (text, rows: docs/drafts.md). */
  'draft_cleared',
  // agent sessions
  'waiting_for_lock',
  'pane_killed',
  'recovering',
  // durable work (plans)
  'phase_completed',
  'phase_failed',
] as const;
export type EventKind = (typeof eventKinds)[number];

/** One line of a handle's event log. */
export interface CalEvent {
  time: string;
  handle: string;
  event: EventKind;
  turn?: string;
  detail?: Record<string, unknown>;
}

/** What a running turn shows so far (the CLI's own record, never terminal text). */
export interface TurnProgress {
  phase: 'waiting' | 'running' | 'ended';
  /** Tool calls of this turn, in order; `status` is set once the call returned. */
  tools: readonly ToolActivity[];
  /** The assistant's text of this turn so far. */
  partialAnswer: string;
}

/** The callbacks and cancellation every turn-taking call accepts. */
export interface TurnCallOptions {
  /** Give up waiting for the end of the turn after this long (default 600); the turn may still finish (`recover`). */
  timeoutSeconds?: number;
  /** Cancels a waiting or running call the way Ctrl-C does the command: the turn is settled, the lock released. */
  signal?: AbortSignal;
  /** Each lifecycle event, as it is recorded. */
  onEvent?: (event: CalEvent) => void;
  /** The current turn's text and tool activity, as the CLI records them. */
  onProgress?: (progress: TurnProgress) => void;
  /** Through a fleet: how long to wait for the owning host (or, for a start, any worker) to be up before `host_unavailable` (default 30). */
  hostWaitSeconds?: number;
  /**
   * Once the turn is recorded and its message has left cal (pasted, handed to a launch, or to the
   * structured CLI): its handle and turn ids, before the turn ends. A program fires a turn, goes on,
   * and awaits the call's promise later (what `cal start|continue --detach` does across processes).
   */
  onSent?: (sent: { handle: string; turn: string }) => void;
}

export interface StartOptions extends TurnCallOptions {
  provider: ProviderName;
  message: string;
  /** Working directory of the session (default: the process's). */
  cwd?: string;
  model?: string;
  /** `tmux` (default for CLIs), `structured` (the CLI's JSON mode), `acp` (the CLI as an ACP agent) or `api` (API providers). */
  transport?: Transport;
  /** A name to use instead of the handle id. A start whose first turn does not complete releases it. */
  name?: string;
  /** Reuse `name` on purpose: a handle already holding it is removed first (as `remove` would, refused while busy). */
  replace?: boolean;
  systemPrompt?: string;
  /** Path of an MCP config file handed to the CLI. */
  mcpConfig?: string;
  /** What the CLI may do without asking: `default` (the CLI's own settings), `read-only`, `accept-edits`, `bypass`; a CLI with no equivalent refuses it (usage). Recorded in the handle. */
  toolPolicy?: ToolPolicy;
  /** The CLI executable to pin (default: found on the PATH of `env`). */
  cliPath?: string;
  /**
   * Run the session in a new git worktree of the repository `cwd` is in, beside it at
   * `<repo>.cal-worktrees/<name or handle id>`, on a new branch (`branch`, default
   * `cal/<name or handle id>`); recorded on the handle. Not a repository, a branch that exists or
   * uncommitted changes in the repository: `usage`, nothing created.
   */
  worktree?: boolean;
  /** With `worktree`: the new branch's name. */
  branch?: string;
  /** `provider: 'acp'`: the ACP agent's command line, as words (no shell): `gemini --acp`. */
  acpCommand?: string;
  /** false: never trust the working directory on the caller's behalf (a CLI that would ask fails `untrusted_folder`); recorded in the handle. Default true (docs/security.md, "What cal trusts"). */
  trustWorkingDir?: boolean;
}

/**
 * What a continuation expects of the session. Each given field is compared with the session's
 * recorded configuration: a difference is a `stale_handle` error, never a fresh start.
 */
export interface ExpectedConfig {
  cwd?: string;
  model?: string;
  systemPrompt?: string;
  mcpConfig?: string;
  toolPolicy?: ToolPolicy;
  /** `provider: 'acp'`: the ACP agent's command line (recorded on the handle); on a continue, another one is `stale_handle`. */
  acpCommand?: string;
}

export interface ContinueOptions extends TurnCallOptions, ExpectedConfig {
  /** The transport the caller expects the handle to be on: another one is `non_applicable` (a handle keeps the transport it was started with). */
  transport?: Transport;
  /** Another call is continuing this handle: false/absent fails with `busy` at once; true waits in line; a number waits that many seconds. */
  wait?: boolean | number;
  /** false: from this turn on, never trust the working directory on the caller's behalf (recorded in the handle). */
  trustWorkingDir?: boolean;
}

export interface ChatMessage {
  role: 'user' | 'assistant';
  content: string;
}

export interface AskOptions extends TurnCallOptions, ExpectedConfig {
  /** The session to continue; absent or null starts one (then `provider` is required). */
  handle?: HandleRef | null;
  provider?: ProviderName;
  /** The whole conversation as the caller keeps it; the last message is the new user message. */
  messages: readonly ChatMessage[];
  /** For a new session its transport; with a handle, the one expected (another is `non_applicable`, as for continue). */
  transport?: Transport;
  name?: string;
  cliPath?: string;
  wait?: boolean | number;
}

/** A completed turn and the handle as it is after it. */
export interface TurnResult {
  handle: Handle;
  turn: Turn;
}

/** `inspect()`: every readable handle with its last turn, the stored certification results, and the handle files that cannot be read. */
export interface SessionList {
  handles: HandleSummary[];
  certifications: CertificationSummary[];
  /** Handle files that do not parse (left untouched), with the name they still carry. */
  unreadable: Array<{ file: string; reason: string; name: string | null }>;
  /** Through a fleet: every known host, and whether it answered. */
  hosts?: Array<{ host: string; available: boolean }>;
}

/** `inspect(ref)`: one handle with its panes, turns and events, and what a person needs to look at it. */
export interface SessionDetail extends HandleView {
  /** The current pane's screen (for people; never an answer), or null. */
  screen: string | null;
  /** The command that attaches a terminal to the live pane, or null. */
  attach: string[] | null;
  /** Stored `certify` results for the handle's CLI version, one per mode. */
  certification: CertificationSummary[];
}

export interface InspectOptions {
  /** Capture the live pane's screen (default true). */
  screen?: boolean;
}

export interface RecoverOptions {
  /** Say what would be done, change nothing. */
  dryRun?: boolean;
  /** Send a lost turn again through continuation. */
  retryLost?: boolean;
  timeoutSeconds?: number;
  signal?: AbortSignal;
  onEvent?: (event: CalEvent) => void;
}

/** A plan run found unfinished by `recover`, and what became of it. */
export interface RunRecovery {
  run: string;
  status: string;
  skipped?: string;
}

export interface RecoverResult {
  dryRun: boolean;
  turns: RecoverItem[];
  runs: RunRecovery[];
}

type CertifyRequest = Parameters<typeof runCertifications>[0];
export type CertifyReport = Awaited<ReturnType<typeof runCertifications>>;
export type CertOutcome = CertifyReport['outcomes'][number];
export type CertId = CertOutcome['id'];

export interface CertifyOptions {
  provider: ProviderName;
  cliPath?: string;
  /** Only these certifications (default: every one that applies). */
  only?: readonly CertId[];
  /** Against the vendor's real service with the caller's own credentials and CLI config. */
  live?: boolean;
  /** Scenarios at a time (default 3). */
  jobs?: number;
  turnTimeoutSeconds?: number;
  /** Keep each scenario's scratch folder. */
  keep?: boolean;
  onStart?: CertifyRequest['onStart'];
  onOutcome?: CertifyRequest['onOutcome'];
}

export interface CertifyResult {
  report: CertifyReport;
  /** The results file in the state directory (what `inspect` reads). */
  savedTo: string;
}

export interface CancelOptions {
  /** How long recover may follow a turn whose cal is gone (as `recover`'s timeoutSeconds). */
  timeoutSeconds?: number;
  onEvent?: (event: CalEvent) => void;
}

/**
 * What `cancel` did (design §6): `cancelled` (the cal running the turn interrupted its CLI and
 * settled it `interrupted`), `already_ended` (the turn ended otherwise first), `recovered` (its
 * cal was gone: settled as `recover` settles it, `recovered` says how) or `idle` (nothing was in
 * flight; nothing was done). `turn` is the turn's record as it ended, null when idle.
 */
export type CancelResult = CancelOutcome;

export interface WaitOptions {
  /** Give up after this long (`timeout`); the turns go on. Default: no bound. */
  timeoutSeconds?: number;
  /** Stops waiting (`interrupted`); the turns go on. */
  signal?: AbortSignal;
}

export interface RemoveOptions {
  /** Remove even while a turn is in flight (another call holds the handle, or a turn never settled). */
  force?: boolean;
}

export interface RemoveResult {
  /** The handle as it was before it was removed. */
  handle: Handle;
  /** How many of its tmux panes were still running and were ended. */
  panesEnded: number;
  /** Its git worktree (`start` with `worktree`): `removed` with its branch when clean and merged, else kept (`kept` says why). */
  worktree?: { path: string; branch: string; removed: boolean; kept: string | null };
}

export interface ReapOptions {
  /** End panes idle at least this many seconds (default: the state directory's policy, docs/reaping.md); null: never by idleness. */
  idleSeconds?: number | null;
  /** Keep at most this many live panes, least recently used ended first (default: the policy); null: no cap. */
  maxLive?: number | null;
  /** Say what would be ended, end nothing. */
  dryRun?: boolean;
  onEvent?: (event: CalEvent) => void;
}

/** One live pane of a handle and what reaping did with it (`reaped`, `would_reap` on a dry run, or `kept`, with why). */
export type { ReapItem } from '../sessions/reaping.js';

export interface EventsOptions {
  /** Keep yielding new events until `signal` aborts or the handle is removed (default: end after the recorded ones). */
  follow?: boolean;
  signal?: AbortSignal;
  /** How often a follow reads what the log gained, in milliseconds (default 250). */
  pollMs?: number;
}

/** A fleet of cal workers (docs/fleet.md): the Redis URL they share (`redis://` or `rediss://`, with a password if it has one). */
export interface FleetOptions {
  connection: string;
  /**
   * The Redis password, given apart from the URL so it is in no process's argv (default:
   * `CAL_FLEET_PASSWORD` of `env`); a password in the URL comes first.
   */
  password?: string;
}

export interface OpenOptions {
  /** Run every call through a fleet of workers instead of this machine (default: `CAL_FLEET` of `env`). */
  fleet?: FleetOptions;
  /** The state directory (default: `CAL_STATE_DIR` of `env`, else the XDG state dir `~/.local/state/cal`). */
  stateDir?: string;
  /** The environment handed to the CLIs (default: `process.env`). Secrets in it are never written. */
  env?: Record<string, string | undefined>;
}

/** What `openSessions` returns: the continuation contract of design §4–§6 for one state directory. */
export interface Sessions {
  /** The state directory in use. */
  readonly stateDir: string;
  start(options: StartOptions): Promise<TurnResult>;
  continue(ref: HandleRef, message: string, options?: ContinueOptions): Promise<TurnResult>;
  ask(options: AskOptions): Promise<TurnResult>;
  killTmux(ref: HandleRef): Promise<Handle>;
  /** Ends the handle's panes and deletes its records (the CLI's own transcript stays); busy while a turn is in flight unless `force`. */
  remove(ref: HandleRef, options?: RemoveOptions): Promise<RemoveResult>;
  inspect(): Promise<SessionList>;
  inspect(ref: HandleRef, options?: InspectOptions): Promise<SessionDetail>;
  recover(options?: RecoverOptions): Promise<RecoverResult>;
  /**
   * Attaches this process's terminal to the session's live pane until the user detaches (tmux's
   * exit status). `non_applicable` for a structured or API session, `not_found` when the pane is gone.
   */
  attach(ref: HandleRef): Promise<number>;
  /**
   * Waits for a handle's newest turn (or `turn`), fired with `onSent` or `--detach` or run by
   * another process, to settle: resolves with it completed, else throws its `TurnError`.
   */
  wait(ref: HandleRef, options?: WaitOptions & { turn?: string }): Promise<TurnResult>;
  /**
   * Waits for the first of several handles' newest turns to settle: resolves with it (its
   * `handle` says which) when it completed, else throws its `TurnError` (`result` has it).
   */
  waitForAny(refs: readonly HandleRef[], options?: WaitOptions): Promise<TurnResult>;
  /** Cancels the turn in flight on a handle, whichever process runs it (see CancelResult). */
  cancel(ref: HandleRef, options?: CancelOptions): Promise<CancelResult>;
  /** Ends idle panes (never one with a turn in flight, a terminal attached, or a possible draft); the sessions resume natively on their next continue. */
  reap(options?: ReapOptions): Promise<import('../sessions/reaping.js').ReapItem[]>;
  certify(options: CertifyOptions): Promise<CertifyResult>;
  events(ref: HandleRef, options?: EventsOptions): AsyncIterable<CalEvent>;
  /** Releases what the object holds open (a fleet's Redis connections); nothing on one machine. */
  close(): Promise<void>;
}
