import type { HandleSummary, HandleView } from '../sessions/agent-sessions.js';
import type { ToolActivity } from '../state/turns.js';

/**
 * What the TUI reads: built in commands/inspect.ts from the sessions object and certify's store; tests pass a scripted one. The TUI never
 * reaches below the sessions layer (no tmux, no adapters, no engine).
 */
export interface InspectSource {
  list(): Promise<HandleSummary[]>;
  describe(ref: string): Promise<HandleView>;
  screen(ref: string): Promise<string | null>;
  attachCommand(ref: string): Promise<string[] | null>;
  /** Stored `cal certify` results for a provider's CLI version (absent: not known here). */
  certification?(provider: string, version: string): Promise<CertificationInfo[]>;
  /**
   * The actions, each one call of the library (the same the CLI's commands make), so a failure is
   * the same typed error (`kind`, `message`) `cal continue|start|cancel|kill-tmux|remove` prints.
   */
  send(ref: string, message: string, watch: TurnWatch): Promise<TurnOutcome>;
  start(request: NewSessionRequest, watch: TurnWatch): Promise<TurnOutcome>;
  /** `cal cancel`: one line saying what happened (nothing in flight, cancelled, already ended…). */
  cancel(ref: string): Promise<string>;
  /** `cal kill-tmux`: one line. */
  killPane(ref: string): Promise<string>;
  /** `cal remove` (without --force: a turn in flight is a busy error): one line. */
  remove(ref: string): Promise<string>;
  /** The providers `n` offers (cal start --provider). */
  providers: readonly string[];
}

/** What `n` asks for: cal start --provider P --cwd DIR MESSAGE. */
export interface NewSessionRequest {
  provider: string;
  cwd: string;
  message: string;
}

/** How a turn the TUI started reports back while it runs (the library's onSent and onProgress). */
export interface TurnWatch {
  signal: AbortSignal;
  onSent(sent: { handle: string; turn: string }): void;
  onProgress(progress: { phase: string; tools: readonly ToolActivity[]; partialAnswer: string }): void;
}

/** A turn that completed: its answer. (Any other ending is thrown, as the library throws it.) */
export interface TurnOutcome {
  handle: string;
  turn: string;
  answer: string | null;
}

/** Where one CLI version stands in one certification mode (as `cal certify` stored it). */
export interface CertificationInfo {
  mode: 'scripted' | 'live';
  certified: boolean;
  pass: number;
  fail: number;
  skip: number;
  failing: string[];
  missing: string[];
  lastRunAt: string;
}

/** Where the TUI was, so it can come back to the same place after an attach. */
export interface TuiPlace {
  mode: 'list' | 'detail';
  /** The handle shown in detail mode. */
  ref: string | null;
  /** The selected row of the list. */
  selected: number;
}
