import type { PinnedCli, ProviderName, ToolPolicy } from '../handles/schema.js';
import type { ToolActivity } from '../handles/tool-activity.js';
import type { SupportedVersions } from './versions.js';
import type { JsonlLaunch } from './early-launch.js';
import type { MessageGuard } from './message-guard.js';
import type { FolderTrust } from './folder-trust.js';
import type { DraftControl, StallKeys } from './pane-control.js';

export type { DraftControl, StallKeys } from './pane-control.js';
export { INTERRUPT_KEY_GAP_MS } from './pane-control.js';
export type { FolderTrust } from './folder-trust.js';

/** What a CLI's adapter can do. */
export interface Capabilities {
  /** Messages can be pasted into a live interactive pane. */
  tmuxContinuation: boolean;
  /** A pane that is gone can be relaunched with the CLI's own resume. */
  nativeResumeInTmux: boolean;
  /** A non-interactive JSON mode with native resume exists. */
  structuredTransport: boolean;
  /** No CLI: cal keeps the history and calls the vendor API. */
  apiOnly: boolean;
  /** The CLI keys sessions by working directory, so resume must run in the original one. */
  needsStableWorkingDir: boolean;
}

export interface SessionConfig {
  /** The physical working directory (real path). */
  cwd: string;
  model: string | null;
  systemPrompt: string | null;
  mcpConfigPath: string | null;
  toolPolicy: string;
  /**
   * The trust policy (docs/security.md, "What cal trusts"): true, cal trusts `cwd` for the CLI as
   * the caller would by answering its folder-trust dialog; false (`--no-trust`, or `trustWorkingDir`
   * false in the state dir's config.json), cal never does, and a CLI that would ask fails
   * `untrusted_folder` before anything is sent. Applied by the engine (engine/folder-trust.ts)
   * through the adapter's `folderTrust`; a launch adds a trust flag or variable only when true.
   */
  trustWorkingDir: boolean;
}

export interface LaunchRequest {
  cli: PinnedCli;
  /** The user's environment, passed through to the CLI. */
  env: Record<string, string>;
  config: SessionConfig;
  mode: 'fresh' | 'resume';
  /** fresh: the id to create (if the CLI lets us choose), resume: the native id. */
  sessionId: string | null;
  /** Delivered by the launch itself when the adapter can (argv), else pasted afterwards. */
  message: string;
  /**
   * A private (0700) directory cal owns for this handle, the same on every launch of it, where
   * the adapter may keep per-session files (hook settings, a signal file). Unset: the adapter
   * launches without them.
   */
  sessionDir?: string;
}

export interface LaunchPlan {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  /** True when argv carries the message, so nothing is pasted after the launch. */
  deliversMessage: boolean;
  /** The native id the CLI will use, when known before it writes anything. */
  sessionId: string | null;
  /**
   * A JSONL file the CLI's own hooks append to (one payload a line), beside the transcript: the
   * engine tails it and hands each record to `TurnObserver.feedSignal`, and keeps the path on the
   * handle so a resume or recover finds it. Null or unset: this launch has no second signal.
   */
  signalFile?: string | null;
}

export interface TranscriptBinding {
  path: string;
  sessionId: string;
}

export interface BindRequest {
  env: Record<string, string>;
  /** The CLI the session runs, for an adapter that reads its store through the CLI itself (OpenCode). */
  cli?: PinnedCli | null;
  config: SessionConfig;
  /** The id the launch chose, when the CLI lets us choose one. */
  sessionId: string | null;
  message: string;
  /** When the message was sent: a transcript older than this is not ours. */
  sentAt: Date;
}

/** What the transcript says about our turn so far. */
export type TurnObservation =
  | { phase: 'waiting' }
  | { phase: 'running'; turnKey: string | null }
  | {
      phase: 'ended';
      status: 'completed' | 'failed' | 'interrupted' | 'lost';
      turnKey: string | null;
      answer: string | null;
      error: string | null;
    };

/** How an observer may know the turn's prompt record besides by its text. */
export interface PromptMatch {
  /**
   * cal sent the message just now into a pane it owns, holding the handle's lock: the first
   * prompt record the CLI writes at or after `notBefore` is this message, even when the CLI
   * stored it transformed (an image path as an attachment). Never set for a turn followed again.
   */
  firstPromptAfterSend?: boolean;
}

export interface TurnObserver {
  /** Feed transcript records in file order. */
  feed(record: unknown): void;
  /**
   * Feed records of the launch's signal file (`LaunchPlan.signalFile`) in file order, whenever
   * they are read: before, between or after transcript records. The observer decides which are
   * this turn's; a signal alone never supplies an answer the transcript can still give.
   */
  feedSignal?(record: unknown): void;
  /**
   * What the transcript (and signals) say so far. It can change with no new record: an end that
   * waits a bounded time for the transcript to catch up is settled when it is read, so read it
   * on every poll.
   */
  readonly observation: TurnObservation;
  readonly tools: ToolActivity[];
  /** Text streamed so far in this turn (for --stream); empty when none. */
  readonly partialAnswer: string;
  /** Records that matched no known shape (counted, never fatal). */
  readonly unknownRecords: number;
  /**
   * Records the CLI wrote, by their own time, at or after the send while no record of the turn's
   * message was found yet (any kind). None: the CLI took nothing; some: it wrote after the send,
   * so cal cannot say the message was not taken. Unset where the observer has no send time.
   */
  readonly recordsSinceSend?: number;
  /**
   * True while the running turn's last record is a request the model has not answered yet (the
   * prompt, or a tool result sent back), false while tools run or wait for a confirmation. Read
   * only for `CliAdapter.stallKeys`; an observer that does not know leaves it unset.
   */
  readonly awaitingModel?: boolean;
}

/** What a turn shows while it runs (for --stream and the spinner). */
export type TurnProgress = Pick<TurnObserver, 'observation' | 'tools' | 'partialAnswer'>;

/** One retry of a failed model request, as the CLI announced it. */
export interface ModelRetry {
  attempt: number;
  maxRetries: number | null;
  delayMs: number | null;
  errorStatus: number | null;
}

export interface StructuredTurnResult {
  sessionId: string;
  status: 'completed' | 'failed' | 'interrupted';
  answer: string | null;
  error: string | null;
  tools: ToolActivity[];
  transcriptPath: string | null;
  /**
   * The turn ended on the CLI's own end event while its process still ran, finishing its own
   * bookkeeping; it exits by itself. The next turn's message waits for that exit.
   */
  cliRunning?: boolean;
}

export interface StructuredRunRequest extends LaunchRequest {
  timeoutMs: number;
  onProgress?: (progress: TurnProgress) => void;
  /** The CLI said it retries a failed model request (claude -p: `system/api_retry`). */
  onRetry?: (retry: ModelRetry) => void;
  /** Cancels the turn as Ctrl-C would (the CLI is interrupted; its stream ends the turn). */
  signal?: AbortSignal;
  /** The CLI process was started (its pid), before cal waits for it to end. */
  onSpawned?: (pid: number) => void;
  /**
   * The transcript the handle recorded for this session on an earlier turn, if any: an adapter
   * whose CLI keeps one file per session may take it again (once it checked the file still is
   * that session's) instead of searching the CLI's folders for it on every turn.
   */
  knownTranscript?: string | null;
}

export interface StructuredTransport {
  run(req: StructuredRunRequest): Promise<StructuredTurnResult>;
  /**
   * Required: how the CLI's headless mode reads a message's first character (Gemini CLI's `-p`
   * runs `/init`, Copilot's `/compact`, Qwen Code's `/clear`), as a pane's `messageGuard` says it
   * for the pane. The engine applies it (src/engine/message.ts), never the adapter.
   */
  readonly messageGuard: MessageGuard;
  /**
   * Optional: starts the CLI of a resumed turn before cal's bookkeeping (turn record, lock,
   * earlier turns, the records before the send), for a CLI that reads its message only after
   * its own start-up; the message follows with `run`. Null when it cannot for this request.
   */
  start?(req: StructuredStartRequest): StartedStructuredTurn | null;
  /**
   * Optional, with `start`: the launch `start` makes for this request (null when it makes none).
   * cal records it after each turn, so its entry can start the next resume's CLI before cal's
   * modules load (early-launch.ts); `start` takes that process only for the same launch.
   */
  nextLaunch?(req: StructuredStartRequest): JsonlLaunch | null;
}

/** What a structured turn is started with before its message is known to be sent. */
export type StructuredStartRequest = Omit<StructuredRunRequest, 'message' | 'timeoutMs' | 'onProgress' | 'onRetry' | 'signal' | 'onSpawned'>;

export interface StartedStructuredTurn {
  /**
   * Sends the message and follows the turn, as `StructuredTransport.run` does, through the
   * started CLI when `req` launches exactly what it was started with and the session is as it
   * was then; otherwise the started CLI is discarded and the turn launched afresh.
   */
  run(req: StructuredRunRequest): Promise<StructuredTurnResult>;
  /** Ends a started CLI that was never sent anything (no-op once `run` took it). */
  discard(): void;
}

export interface ScriptedEnvOptions {
  /**
   * For a user's shell (`cal model env`): leave HOME alone, since every command of that shell
   * would see it; a CLI that keeps its config under HOME uses its own config-dir variable.
   */
  keepHome?: boolean;
}

/**
 * What every coding-agent CLI adapter has, with or without a pane (CliAdapter below adds the
 * pane's message guard). An adapter knows launch and resume argv, environment, dialogs to
 * pre-answer, where the transcript lives and how to read a turn out of it. It never knows about
 * workflow phases, locks or the state directory.
 */
interface CliAdapterBase {
  readonly name: ProviderName;
  /** The executable name looked up on PATH when no --cli-path is given. */
  readonly executable: string;
  /** The tool policies its launch code maps to the CLI's own flags (absent: only `default`); others are refused before the handle is saved. */
  readonly toolPolicies?: readonly ToolPolicy[];
  /** Environment variables the CLI needs by name (never their values), for the handle. */
  readonly envNames: readonly string[];
  /** How the CLI trusts a working folder, which the engine applies before every launch (engine/folder-trust.ts). */
  readonly folderTrust: FolderTrust;
  /** The releases this adapter runs: the oldest proven and the newest certified (design §10); unset for an adapter that has not measured its floor yet. */
  readonly versions?: SupportedVersions;
  /**
   * The real executable (a native binary behind any wrapper) and its version, placed against
   * `versions`: a release below the floor is `cli_unsupported`, thrown before anything runs.
   */
  resolveCli(cliPath: string | undefined, env: Record<string, string>): Promise<PinnedCli>;
  /**
   * Asks the CLI at this path its version when a pinned file has changed since its handle was
   * pinned; absent: `<exe> --version` in the given environment.
   */
  readVersion?(executable: string, env: Record<string, string>): Promise<string>;
  /**
   * Pre-answer startup dialogs for this working directory (onboarding, …; folder trust is
   * `folderTrust`'s, applied by the engine before this). True when it wrote what a CLI reads at
   * its start; false when nothing was written, the only answer that keeps a CLI cal's entry
   * started early (a void answer discarded every one of Codex's, unseen).
   */
  prepare(env: Record<string, string>, config: SessionConfig): Promise<boolean>;
  launch(req: LaunchRequest): LaunchPlan;
  /**
   * Optional: makes what a launch plan names exist before its pane starts, for a CLI that takes
   * a chosen id only for a session its store already holds (OpenCode: an empty session made with
   * `opencode import`). It runs before the turn says `sending`; a failure fails the launch with
   * nothing sent.
   */
  beforeLaunch?(req: LaunchRequest, plan: LaunchPlan): Promise<void>;
  /** Find the transcript the CLI wrote for our first message; null while it is not there yet. */
  bindTranscript(req: BindRequest): Promise<TranscriptBinding | null>;
  /**
   * For a CLI whose own store is not an append-only JSONL file (OpenCode's SQLite database):
   * appends to the transcript file `bindTranscript` named (a JSONL mirror cal keeps of that
   * session's records) whatever the store holds that the mirror does not yet. The engine calls
   * it before every read of the transcript. Unset: the transcript is the CLI's own file.
   * `cli` is the handle's pinned CLI (from cal's state directory): the only program the refresh
   * may run, whatever the mirror file (which others can write) names.
   */
  refreshTranscript?(transcriptPath: string, cli: PinnedCli | null): Promise<void>;
  /**
   * A fresh observer that recognises our message and the end of its turn. Records written
   * before `notBefore` (when given) are never taken for our message.
   */
  observeTurn(message: string, notBefore?: Date, match?: PromptMatch): TurnObserver;
  /**
   * How cal empties the CLI's input box of a draft a person left there (attached to the pane,
   * typed, detached without Enter) before it pastes into a live pane (docs/drafts.md). Unset:
   * the input cannot be cleared safely, and cal refuses to paste into the CLI's live pane
   * (`non_continuable`) before anything is sent.
   */
  readonly draft?: DraftControl;
  /**
   * When Enter follows a paste, for a TUI that drops an Enter arriving before it has taken the
   * paste: a pause in ms (Gemini CLI), or `'when-shown'`, once its box shows the message (Cline
   * CLI, whose pause under load no fixed delay covers; needs `draft`). Unset: with the paste.
   */
  readonly pasteSubmitDelayMs?: number | 'when-shown';
  /** The TUI keeps a pasted CR as it is (Cline CLI): cal pastes the message's LFs as LFs. Unset: tmux's CRs. */
  readonly pasteKeepsLineFeeds?: boolean;
  /**
   * How soon the CLI records a message it took at its prompt (set only for CLIs that record the
   * prompt at once, before any model reply). A message still unrecorded well past it means the
   * CLI is not at its prompt (a dialog is open): the turn fails at once instead of waiting for
   * the timeout. Launches get a longer bound (the TUI starts first).
   */
  readonly promptRecordedWithinMs?: number;
  /** Releases that record a fresh session's prompt only with its first reply: no bound at their fresh launch. */
  readonly recordsFreshPromptLate?: (version: string) => boolean;
  /**
   * Keys for a TUI that holds a request the model keeps failing in a dialog and records nothing
   * until it is answered (Gemini CLI): while the observer says the turn awaits the model and no
   * record came for `afterMs`, the engine presses `keys` in the pane, then counts again. The keys
   * must answer that dialog so the CLI records its error, and do nothing while a reply is merely
   * slow. Unset: the engine never presses anything on its own.
   */
  readonly stallKeys?: StallKeys;
  /**
   * Optional: the keys that answer a start-up dialog which `prepare` already answered in the
   * CLI's config, when the screen of a just-launched pane shows it anyway (the CLI lost the
   * answer to a concurrent rewrite of its config): null when the screen shows no such dialog.
   * Only an answer cal already gave is given again, never a new one: the engine asks only when
   * the session's policy trusts its folder (`SessionConfig.trustWorkingDir`).
   */
  preAnsweredDialogKeys?(screen: string): string[] | null;
  /**
   * Keys that empty the prompt after a turn ended interrupted, for a TUI that puts the interrupted
   * message back in its input (Qwen Code): pressed once then, so the next paste is not appended
   * to it. Unset: nothing is pressed.
   */
  readonly afterInterruptKeys?: string[];
  /**
   * Keys that stop a TUI still retrying a request after cal failed its turn (Qwen Code retries a
   * failing model for about a minute; Escape stops it and puts the prompt back in the input):
   * pressed once when a turn ends failed (one at a time, INTERRUPT_KEY_GAP_MS apart: OpenCode's
   * interrupt is Escape twice), then `afterInterruptKeys` a moment later. Unset: none.
   */
  readonly afterFailKeys?: string[];
  /**
   * The key a person presses at the pane to interrupt a running turn (tmux key names), for a TUI
   * that Escape does not interrupt (GitHub Copilot CLI: Ctrl-C; OpenCode: Escape twice). Unset:
   * Escape. Pressed one at a time, INTERRUPT_KEY_GAP_MS apart.
   */
  readonly interruptKeys?: readonly string[];
  structured?: StructuredTransport;
  /**
   * The CLI's Agent Client Protocol mode (`--transport acp`): only how its agent process is
   * launched; the protocol itself is cal's shared client (adapters/acp/). Unset: no ACP mode.
   */
  readonly acp?: AcpLaunch;
  /**
   * The environment that points this CLI at cal's scripted model, in a throwaway HOME (or CLI
   * home) under `dir` that cal manages: for demo, certify and tests. No key, no network.
   */
  scriptedModelEnv(dir: string, modelUrl: string, env: Record<string, string>, opts?: ScriptedEnvOptions): Promise<Record<string, string>>;
  /**
   * Set when the CLI cannot be pointed at cal's scripted model (no local endpoint option): why.
   * Then nothing offline can certify it; only a user's live run with the real CLI and a login
   * (`cal certify --live`) can, and `cal inspect` marks it uncertified here.
   */
  readonly liveCertificationOnly?: string;
}

/** How a CLI runs as an ACP agent: one process per turn, JSON-RPC on its stdin and stdout. */
export interface AcpLaunch {
  /** The agent's command line and environment for one turn (`gemini --acp`, `opencode acp`). */
  command(req: LaunchRequest): { argv: string[]; env: Record<string, string> };
  /** Required: how the agent reads a prompt's first character (ACP agents run `/command`s). */
  readonly messageGuard: MessageGuard;
}

/** An adapter whose CLI runs in a pane: it must say how that CLI reads a message's first character. */
export interface PaneCliAdapter extends CliAdapterBase {
  readonly capabilities: Capabilities & { tmuxContinuation: true };
  /** Required: see MessageGuard. The engine applies it (src/engine/message.ts), never the adapter. */
  readonly messageGuard: MessageGuard;
}

/** An adapter with no pane (structured transport only): nothing is typed into a TUI. */
export interface PanelessCliAdapter extends CliAdapterBase {
  readonly capabilities: Capabilities & { tmuxContinuation: false };
  readonly messageGuard?: undefined;
}

/**
 * The one interface every coding-agent CLI adapter implements. An adapter with a pane
 * (`capabilities.tmuxContinuation: true`) does not type-check without its `messageGuard`.
 */
export type CliAdapter = PaneCliAdapter | PanelessCliAdapter;
