/**
 * A program that uses coding-agent-loop the way an outside project does: it imports only the
 * package's public entry, names every exported type (packed-install.test.ts checks that), and
 * drives a real CLI. It prints one JSON object of what it saw; the test asserts on it and on the
 * scripted model's request log.
 *
 * Environment: LIB_STATE (state dir), LIB_CWD (working dir), LIB_CLI_PATH (the claude binary);
 * the rest (HOME, ANTHROPIC_BASE_URL, …) is the CLI's environment and passes through.
 */
import {
  CalError,
  CertificationError,
  TurnError,
  eventKinds,
  exitCodes,
  openSessions,
  providerNames,
  toolPolicies,
  transports,
  type AskOptions,
  type CalErrorDetails,
  type CalEvent,
  type CancelOptions,
  type CancelResult,
  type CertId,
  type CertificationSummary,
  type CertifyOptions,
  type CertifyReport,
  type CertifyResult,
  type CertOutcome,
  type ChatMessage,
  type ContinueOptions,
  type ErrorKind,
  type EventKind,
  type EventsOptions,
  type ExpectedConfig,
  type FleetOptions,
  type Handle,
  type HandleRef,
  type HandleSummary,
  type HandleView,
  type InspectOptions,
  type OpenOptions,
  type PaneView,
  type ProviderName,
  type ReapItem,
  type ReapOptions,
  type RecoverAction,
  type RecoverItem,
  type RecoverOptions,
  type RecoverResult,
  type RunRecovery,
  type SessionDetail,
  type SessionList,
  type Sessions,
  type StartOptions,
  type ToolActivity,
  type ToolPolicy,
  type Transport,
  type Turn,
  type TurnCallOptions,
  type TurnProgress,
  type TurnResult,
  type WaitOptions,
  type TurnStatus,
} from 'coding-agent-loop';

function need(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const provider: ProviderName = 'claude-code';
const transport: Transport = 'tmux';
const toolPolicy: ToolPolicy = toolPolicies[0];
// One machine here; a fleet (docs/fleet.md) would be opened with its Redis URL instead.
const fleet: FleetOptions | undefined = process.env.LIB_FLEET ? { connection: process.env.LIB_FLEET } : undefined;
const open: OpenOptions = { stateDir: need('LIB_STATE'), env: process.env, ...(fleet ? { fleet } : {}) };
const sessions: Sessions = await openSessions(open);
// Named so a program can type its own helpers; the idle-pane and cancel calls themselves are
// driven by the end-to-end tests (reaping, cancel-remote).
const cancelQuietly = (ref: string, options: CancelOptions = { timeoutSeconds: 5 }): Promise<CancelResult> => sessions.cancel(ref, options);
const reapNothing = (options: ReapOptions = { dryRun: true }): Promise<ReapItem[]> => sessions.reap(options);
void cancelQuietly;
void reapNothing;

const events: EventKind[] = [];
const progress: TurnProgress[] = [];
const callbacks: TurnCallOptions = {
  timeoutSeconds: 120,
  onEvent: (e: CalEvent) => events.push(e.event),
  onProgress: (p: TurnProgress) => progress.push(p),
};

// 1. Start a session.
const startOptions: StartOptions = { ...callbacks, provider, transport, message: 'Remember the codeword TANGO.', toolPolicy, cwd: need('LIB_CWD'), cliPath: need('LIB_CLI_PATH') };
const first: TurnResult = await sessions.start(startOptions);
const handle: Handle = first.handle;
const ref: HandleRef = handle;

// 2. Lose the pane, then continue: native resume in a new pane.
await sessions.killTmux(ref);
const expected: ExpectedConfig = { cwd: need('LIB_CWD') };
const continueOptions: ContinueOptions = { ...callbacks, ...expected, wait: 30 };
const second: TurnResult = await sessions.continue(handle.id, 'What was the codeword?', continueOptions);
// Waiting for any of several handles' newest turns: this one has ended, so it comes back at once.
const waitOptions: WaitOptions = { timeoutSeconds: 10 };
const waited: TurnResult = await sessions.waitForAny([handle.id], waitOptions);
if (waited.turn.id !== second.turn.id) throw new Error(`waitForAny gave turn ${waited.turn.id}, not ${second.turn.id}`);

// 3. Ask with the whole history (five messages): only the newest user message is sent.
const history: ChatMessage[] = [
  { role: 'user', content: 'Remember the codeword TANGO.' },
  { role: 'assistant', content: first.turn.answer ?? '' },
  { role: 'user', content: 'What was the codeword?' },
  { role: 'assistant', content: second.turn.answer ?? '' },
  { role: 'user', content: 'What was the codeword, again?' },
];
const askOptions: AskOptions = { ...callbacks, handle, messages: history };
const third: TurnResult = await sessions.ask(askOptions);

// 4. Typed errors: an edited history, and a handle that does not exist.
const caught: Array<{ kind: ErrorKind; exitCode: number; field?: string | undefined; details: CalErrorDetails }> = [];
for (const attempt of [
  () => sessions.ask({ handle, messages: [{ role: 'user', content: 'Remember the codeword MANGO.' }, ...history.slice(1)] }),
  () => sessions.continue('nosuchhandle', 'hello'),
]) {
  try {
    await attempt();
  } catch (err) {
    if (!(err instanceof CalError)) throw err;
    if (err instanceof TurnError) throw new Error(`unexpected settled turn ${err.result.turn.status}`);
    caught.push({ kind: err.kind, exitCode: err.exitCode, field: err.field, details: err.details });
  }
}

// 5. The record: events, the handle in detail and in the list, a dry-run recover.
const eventsOptions: EventsOptions = { follow: false };
const recorded: CalEvent[] = [];
for await (const e of sessions.events(handle, eventsOptions)) recorded.push(e);
const inspectOptions: InspectOptions = { screen: true };
const detail: SessionDetail = await sessions.inspect(handle, inspectOptions);
const view: HandleView = detail;
const panes: PaneView[] = view.panes;
const list: SessionList = await sessions.inspect();
const summary: HandleSummary | undefined = list.handles.find((h) => h.handle.id === handle.id);
const recoverOptions: RecoverOptions = { dryRun: true };
const recovered: RecoverResult = await sessions.recover(recoverOptions);
const recoverItems: RecoverItem[] = recovered.turns;
const recoverActions: RecoverAction[] = recoverItems.map((i) => i.action);
const runs: RunRecovery[] = recovered.runs;

// 6. One certification of the same CLI, stored where inspect reads it.
const only: CertId[] = ['CertFreshLaunch'];
const certifyOptions: CertifyOptions = { provider, cliPath: need('LIB_CLI_PATH'), only, jobs: 1 };
let certified: CertifyResult;
try {
  certified = await sessions.certify(certifyOptions);
} catch (err) {
  if (!(err instanceof CertificationError)) throw err;
  certified = err.result;
}
const report: CertifyReport = certified.report;
const outcomes: CertOutcome[] = report.outcomes;
const certification: CertificationSummary[] = (await sessions.inspect(handle, { screen: false })).certification;

// 7. Nothing but the entry can be imported.
let deepImport = 'allowed';
try {
  await import('coding-agent-loop/dist/state/store.js' as string);
} catch (err) {
  deepImport = (err as { code?: string }).code ?? String(err);
}

const turns: Turn[] = detail.turns;
const statuses: TurnStatus[] = turns.map((t) => t.status);
const tools: ToolActivity[] = turns.flatMap((t) => t.tools);
process.stdout.write(
  JSON.stringify({
    handle: handle.id,
    answers: [first.turn.answer, second.turn.answer, third.turn.answer],
    statuses,
    tools: tools.length,
    events,
    recorded: recorded.map((e) => e.event),
    progressPhases: [...new Set(progress.map((p) => p.phase))],
    caught,
    panes: panes.length,
    listed: summary?.lastTurn?.status ?? null,
    recoverActions,
    runs: runs.length,
    certify: outcomes.map((o) => `${o.id}:${o.result}`),
    certification: certification.map((c) => `${c.mode}:${c.pass}`),
    deepImport,
    knownEvents: eventKinds.length,
    providers: providerNames.length,
    toolPolicies: toolPolicies.length,
    transports: transports.length,
    staleExit: exitCodes.stale_handle,
  }) + '\n',
);
