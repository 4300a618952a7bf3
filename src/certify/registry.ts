import type { Capabilities } from '../adapters/types.js';
import { CalError } from '../errors.js';
import * as continuation from './scenarios/continuation.js';
import * as hygiene from './scenarios/hygiene.js';
import * as interruption from './scenarios/interruption.js';
import { shellProbe } from './scenarios/common.js';
import * as launch from './scenarios/launch.js';
import * as turns from './scenarios/turns.js';
import type { Certification } from './certification.js';
import { certIds, type Capability, type CertId } from './types.js';

/**
 * The registry of certifications. Each one backs one adapter capability: `cal certify` runs it
 * for every adapter that claims that capability, and reports it skipped, with the reason, for
 * the others. A capability an adapter claims with no certification here is a failing test.
 */
const SCRIPTED_ONLY = 'needs the scripted model';

export const certifications: readonly Certification[] = [
  // launch and context
  {
    id: 'CertFreshLaunch',
    area: 'launch and context',
    priority: 'P0',
    capability: 'tmuxContinuation',
    proves: 'The pinned CLI starts in a pane, records the first message of a fresh session and answers it; the handle pins its real path and version.',
    scenario: 'start "Remember the codeword X" in a new folder; check the answer, the native id, the pinned CLI, one live fresh pane and that the model saw exactly that one user message.',
    live: true,
    run: launch.freshLaunch,
  },
  {
    id: 'CertStartupDialogsPreAnswered',
    area: 'launch and context',
    priority: 'P0',
    capability: 'tmuxContinuation',
    proves: 'Startup dialogs (trust, onboarding, …) are pre-answered: the first message is recorded without a keystroke, also in a folder the CLI has never seen.',
    scenario: 'start in a fresh git repository reached through a symlink, then in a second new folder; each first message must be recorded and answered within 45 s without any key sent.',
    live: true,
    run: launch.startupDialogsPreAnswered,
  },
  {
    id: 'CertWorkingDirectory',
    area: 'launch and context',
    priority: 'P0',
    capability: 'tmuxContinuation',
    proves: "The CLI and its tools run in the requested working directory (its real path, also when reached through a symlink).",
    scenario: "start in a folder given through a symlink with a turn that runs `pwd` in the CLI's shell tool; the tool's output must be the folder's real path.",
    live: `${SCRIPTED_ONLY} ([[cal:shell=${shellProbe('pwd')}]] makes the model call the shell tool)`,
    run: launch.workingDirectory,
  },
  {
    id: 'CertRuntimeContext',
    area: 'launch and context',
    priority: 'P0',
    capability: 'tmuxContinuation',
    proves: 'The system prompt and the MCP config reach the CLI natively: the prompt is in its model request and the MCP server is started and called.',
    scenario: 'start with --system-prompt carrying a marker and --mcp-config naming a probe MCP server, with a turn that calls the probe; the raw model request must hold the marker and the probe must log the call.',
    live: `${SCRIPTED_ONLY} (raw model requests are recorded by a proxy in front of it; [[cal:mcp=…]] makes the call)`,
    run: launch.runtimeContext,
  },
  {
    id: 'CertResumeStartupPrompts',
    area: 'launch and context',
    priority: 'P1',
    capability: 'nativeResumeInTmux',
    proves: 'Prompts a resumed session shows (trust of an untrusted repository, MCP servers, resume folder) are handled: each resumed message is submitted once without a keystroke.',
    scenario: 'start in a fresh git repository through a symlink with an MCP server; kill the pane and continue, twice in a row; each resume must record and answer its message, which the model sees once.',
    live: true,
    run: launch.resumeStartupPrompts,
  },
  // turns
  {
    id: 'CertPromptPaste',
    area: 'turns',
    priority: 'P0',
    capability: 'tmuxContinuation',
    proves: 'A large multi-line message pasted into a live pane is submitted once and whole, byte for byte.',
    scenario: 'continue with a 6 KB message of 100+ lines (quotes, $(…), backticks, a leading /, non-ASCII) that the model echoes; the model must see it exactly once as one new user message, and the answer must equal it.',
    live: `${SCRIPTED_ONLY} ([[cal:echo]] shows the message as the model received it)`,
    run: turns.promptPaste,
  },
  {
    id: 'CertCompletionFromTranscript',
    area: 'turns',
    priority: 'P0',
    capability: 'tmuxContinuation',
    proves: "The end of a turn comes from the CLI's own record while the CLI stays open, never from a pause in the terminal output.",
    scenario: 'continue with an answer streamed in 8 chunks 0.7 s apart; the turn must end after the whole stream with the whole answer and a CLI turn key, the pane still alive.',
    live: `${SCRIPTED_ONLY} ([[cal:chunk-delay=…]] paces the stream)`,
    run: turns.completionFromTranscript,
  },
  {
    id: 'CertSlowToolNoFalseIdle',
    area: 'turns',
    priority: 'P0',
    capability: 'tmuxContinuation',
    proves: 'A slow tool call is never taken for the end of the turn: the answer is the one after the tool result.',
    scenario: 'continue with a turn whose shell tool sleeps 8 s then prints a marker; the turn must end after the tool with the final answer, and the tool output on the turn.',
    live: `${SCRIPTED_ONLY} ([[cal:shell=true && sleep 8 && …]] scripts the tool call)`,
    run: turns.slowToolNoFalseIdle,
  },
  {
    id: 'CertFinalAnswerFidelity',
    area: 'turns',
    priority: 'P0',
    capability: 'tmuxContinuation',
    proves: 'The answer is the exact multi-line text the model produced: no terminal chrome, wrapping or lost characters.',
    scenario: "continue with a 40-line answer of unicode, emoji, quotes and <tags>, then a markdown-shaped one (lists, quote, indentation); each answer must equal the model's text byte for byte.",
    live: `${SCRIPTED_ONLY} (the exact text must be known in advance)`,
    run: turns.finalAnswerFidelity,
  },
  {
    id: 'CertToolActivityRecorded',
    area: 'turns',
    priority: 'P1',
    capability: 'tmuxContinuation',
    proves: 'Shell and MCP tool calls are recorded on their own turn with name, input and output; a turn without tools lists none.',
    scenario: 'continue with a shell tool turn, an MCP tool turn (probe server) and a plain turn; check each turn record.',
    live: `${SCRIPTED_ONLY} ([[cal:shell=…]] and [[cal:mcp=…]] script the calls)`,
    run: turns.toolActivityRecorded,
  },
  {
    id: 'CertFailedTurnSettles',
    area: 'turns',
    priority: 'P0',
    capability: 'tmuxContinuation',
    proves: "A turn the model fails settles promptly as failed with the CLI's error, never as an empty successful answer; the session goes on.",
    scenario: 'continue with a turn the model answers with HTTP 500; the turn must end failed with an error message and no answer, then the next turn must recall.',
    live: `${SCRIPTED_ONLY} ([[cal:http=500]] scripts the failure)`,
    run: turns.failedTurnSettles,
  },
  {
    id: 'CertBusyInputPolicy',
    area: 'turns',
    priority: 'P0',
    capability: 'tmuxContinuation',
    proves: 'A message sent while a turn runs is refused (busy) or, with --wait, queued as its own later turn; it is never merged into the running turn.',
    scenario: 'while a 5 s turn runs, continue without --wait (must fail busy at once, never reaching the model) and with --wait (must run as its own turn after the running one ends).',
    live: `${SCRIPTED_ONLY} ([[cal:delay=…]] keeps the turn running)`,
    run: turns.busyInputPolicy,
  },
  // continuation
  {
    id: 'CertHandleRoundTrip',
    area: 'continuation',
    priority: 'P0',
    capability: 'tmuxContinuation',
    proves: 'Turn two needs nothing but the handle: another cal process in another folder continues the same native session by name or id.',
    scenario: 'start with --name; continue by name from a separate cal process in another folder, then by id; both must recall the codeword in the same native session.',
    live: true,
    run: continuation.handleRoundTrip,
  },
  {
    id: 'CertPasteIntoLivePane',
    area: 'continuation',
    priority: 'P0',
    capability: 'tmuxContinuation',
    proves: 'With the pane alive and idle, continue pastes into it: no relaunch, one new user message.',
    scenario: 'start, then continue; events must be running, completed; still one pane, the same one; the model sees one request with the history and the new message.',
    live: true,
    run: continuation.pasteIntoLivePane,
  },
  {
    id: 'CertSessionContinuationAfterTmuxLoss',
    area: 'continuation',
    priority: 'P0',
    capability: 'nativeResumeInTmux',
    proves: "When the pane is gone, continue relaunches the CLI with its own resume in a new pane and the conversation goes on.",
    scenario: 'start, kill the pane, continue; events must be lost_tmux, resuming, running, completed; same native id, old pane archived, codeword recalled.',
    live: true,
    run: continuation.sessionContinuationAfterTmuxLoss,
  },
  {
    id: 'CertNativeResumeOnlyLatestMessage',
    area: 'continuation',
    priority: 'P0',
    capability: 'nativeResumeInTmux',
    proves: 'A native resume sends only the new message: the CLI reloads its history, earlier turns are never replayed.',
    scenario: 'two turns, kill the pane, a third; every resumed request must carry the two earlier messages once each and the new one once, as the last.',
    live: `${SCRIPTED_ONLY} (the model's request log shows what was sent)`,
    run: continuation.nativeResumeOnlyLatestMessage,
  },
  {
    id: 'CertNonContinuableError',
    area: 'continuation',
    priority: 'P0',
    capability: 'tmuxContinuation',
    proves: 'A session whose CLI never recorded a first turn is refused with non_continuable; it is never silently started fresh.',
    scenario: 'kill the pane right after launch, before the CLI records the first message; continue must fail non_continuable without a new pane or a model request.',
    live: true,
    run: continuation.nonContinuableError,
  },
  {
    id: 'CertStableWorkingDir',
    area: 'continuation',
    priority: 'P0',
    capability: 'needsStableWorkingDir',
    proves: 'A CLI that keys sessions by folder is always resumed in the original folder; another or a recreated folder is stale_handle, never a fresh start.',
    scenario: 'start in a folder through a symlink, kill the pane, continue from elsewhere and via the real path (must recall); then with another folder and after recreating the folder (must be stale_handle on workingDir, nothing launched).',
    live: true,
    run: continuation.stableWorkingDir,
  },
  {
    id: 'CertPinnedExecutable',
    area: 'continuation',
    priority: 'P0',
    capability: 'nativeResumeInTmux',
    proves: 'A relaunch runs the executable pinned at start, whatever is first on PATH later.',
    scenario: 'start, put another executable of the same name and version 99.99.99 first on PATH, kill the pane, continue; the resume must recall and the other executable must never run.',
    live: true,
    run: continuation.pinnedExecutable,
  },
  {
    id: 'CertStructuredResume',
    area: 'continuation',
    priority: 'P0',
    capability: 'structuredTransport',
    proves: "The structured (JSON) transport resumes the CLI's own session by id with only the new message.",
    scenario: 'start with --transport structured, continue twice; same native id each time, no pane, recalled; each request carries the history once and the new message once.',
    live: true,
    run: continuation.structuredResume,
  },
  {
    id: 'CertAcpResume',
    area: 'continuation',
    // P1: the ACP transport is proven on the pinned releases only (CI certifies the oldest matrix releases on P0).
    priority: 'P1',
    capability: 'structuredTransport',
    needsAcp: true,
    proves: "The ACP transport (the CLI as an Agent Client Protocol agent) resumes the CLI's session by session/load with only the new message.",
    scenario: 'start with --transport acp, continue twice; same native id each time, no pane, recalled (the replay of session/load never taken for the answer); each request carries the history once and the new message once.',
    live: true,
    run: continuation.acpResume,
  },
  {
    id: 'CertNoHistoryReplayAfterRestart',
    area: 'continuation',
    priority: 'P0',
    capability: 'tmuxContinuation',
    proves: 'A cal process started after the transcript already holds earlier turns reports only the new turn.',
    scenario: 'two turns (one with a tool call); then separate cal processes continue, with the pane alive and after a native resume; each must report exactly the new answer, no earlier tool activity, earlier records untouched.',
    live: true,
    run: continuation.noHistoryReplayAfterRestart,
  },
  // interruption
  {
    id: 'CertInterruptedTurnSettles',
    area: 'interruption',
    priority: 'P1',
    capability: 'tmuxContinuation',
    proves: 'A turn the user interrupts (Escape in the pane) ends once, as interrupted, promptly; the session takes the next message.',
    scenario: 'continue with an 8 s streamed answer and press Escape mid-stream; the turn must end interrupted within 6 s with one end event; the next turn completes in the same pane.',
    live: `${SCRIPTED_ONLY} ([[cal:chunk-delay=…]] keeps the answer streaming)`,
    run: interruption.interruptedTurnSettles,
  },
  {
    id: 'CertInterruptKeepsResume',
    area: 'interruption',
    priority: 'P1',
    capability: 'nativeResumeInTmux',
    proves: 'After an interrupt the session still resumes natively with its history intact.',
    scenario: 'interrupt a streamed answer, kill the pane, continue; native resume must recall the codeword of the first turn, which the resumed request carries once.',
    live: `${SCRIPTED_ONLY} ([[cal:chunk-delay=…]] keeps the answer streaming)`,
    run: interruption.interruptKeepsResume,
  },
  {
    id: 'CertKilledMidTurnSettles',
    area: 'interruption',
    priority: 'P0',
    capability: 'tmuxContinuation',
    proves: 'A turn whose pane is killed mid-turn ends lost at once (no answer, no hang until the timeout); the next continue resumes.',
    scenario: 'continue with a turn the model holds for 15 s, kill the pane while it runs; the turn must end lost within 5 s with no answer; the next continue must recall.',
    live: `${SCRIPTED_ONLY} ([[cal:delay=…]] holds the turn)`,
    run: interruption.killedMidTurnSettles,
  },
  // concurrency and hygiene
  {
    id: 'CertConcurrentContinuationBusy',
    area: 'concurrency and hygiene',
    priority: 'P0',
    capability: 'tmuxContinuation',
    proves: 'Two continuations of one handle at the same moment: exactly one runs, the other fails busy (exit 5) and its message never reaches the CLI.',
    scenario: 'two cal processes continue the same handle at once; one must exit 0, the other 5 with busy; only the winner reaches the model; the session goes on.',
    live: `${SCRIPTED_ONLY} ([[cal:delay=…]] makes the turns overlap)`,
    run: hygiene.concurrentContinuationBusy,
  },
  {
    id: 'CertParallelIsolation',
    area: 'concurrency and hygiene',
    priority: 'P0',
    capability: 'tmuxContinuation',
    proves: "Two sessions started at the same moment in the same folder each bind their own transcript and never see each other's answers.",
    scenario: 'start two sessions at once in one git repository with the same first message; give each its own codeword at once; each must recall only its own, with distinct native ids.',
    live: true,
    run: hygiene.parallelIsolation,
  },
  {
    id: 'CertCleanup',
    area: 'concurrency and hygiene',
    priority: 'P1',
    capability: 'tmuxContinuation',
    proves: 'Killing a handle leaves no process (CLI, tools, MCP servers), pane or lock behind, and the session can still be continued.',
    scenario: 'start with an MCP server; after kill-tmux no process carrying the scenario folder may remain within 5 s, the pane must be gone and no lock left; continue must recall.',
    live: true,
    run: hygiene.cleanup,
  },
];

export function certification(id: CertId): Certification {
  const cert = certifications.find((c) => c.id === id);
  if (!cert) throw new CalError('internal', `no certification ${id}`);
  return cert;
}

export function isCertId(value: string): value is CertId {
  return (certIds as readonly string[]).includes(value);
}

/** In words, what each capability means (for skip reasons). */
export const capabilityWords: Record<Capability, string> = {
  tmuxContinuation: 'continuation by paste into a live tmux pane',
  nativeResumeInTmux: 'native resume in a new tmux pane',
  structuredTransport: 'a structured (JSON) transport with native resume',
  apiOnly: 'API-only sessions',
  needsStableWorkingDir: 'sessions keyed by working directory',
};

/** Capabilities an adapter claims that no certification backs (must be none). */
export function uncoveredCapabilities(capabilities: Capabilities): Capability[] {
  return (Object.keys(capabilities) as Capability[]).filter((cap) => capabilities[cap] && !certifications.some((c) => c.capability === cap));
}

export type PlannedCert = { cert: Certification; run: true } | { cert: Certification; run: false; reason: string };

/**
 * What certify does with each certification for an adapter: run it when the adapter claims
 * the capability it backs (and, with --live, when it can run against a real model), else skip
 * it with the reason. `only` narrows the plan to the ids given (in registry order).
 */
export function planCertifications(provider: string, capabilities: Capabilities, opts: { live: boolean; only?: readonly CertId[] | null; acp?: boolean }): PlannedCert[] {
  return certifications
    .filter((cert) => !opts.only || opts.only.includes(cert.id))
    .map((cert): PlannedCert => {
      if (!capabilities[cert.capability]) {
        return { cert, run: false, reason: `${provider} does not claim ${cert.capability} (${capabilityWords[cert.capability]})` };
      }
      if (cert.needsAcp && !opts.acp) return { cert, run: false, reason: `${provider} has no ACP mode in cal` };
      if (opts.live && cert.live !== true) return { cert, run: false, reason: `not run with --live: ${cert.live}` };
      return { cert, run: true };
    });
}
