import type { HandleSummary, HandleView } from '../sessions/agent-sessions.js';

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
