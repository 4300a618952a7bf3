import type { ScenarioContext } from './context.js';
import type { Capability, CertArea, CertId, Priority } from './types.js';

/** A certification: what it proves and the scenario that proves it (the registry lists them). */
export interface Certification {
  id: CertId;
  area: CertArea;
  priority: Priority;
  /** The capability this certification backs: it runs for every adapter that claims it. */
  capability: Capability;
  /** What a pass proves, in one sentence. */
  proves: string;
  /** What the scenario does, in one or two sentences. */
  scenario: string;
  /**
   * Whether the scenario can run against the vendor's real service (`--live`): true, or the
   * reason it needs the scripted model (directives for delays, failures, tool calls, …).
   */
  live: true | string;
  /** Runs only for an adapter with an ACP mode (`CliAdapter.acp`), besides the capability. */
  needsAcp?: boolean;
  run(ctx: ScenarioContext): Promise<void>;
}
