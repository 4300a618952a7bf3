import fs from 'node:fs/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventsOf, handleFromStderr, type CalRun } from './cal.js';
import { cliSuite, pinnedVersion, type CliSuite, type SuiteCalOptions } from './cli-suite.js';

/** Every turn of these scenarios waits at most this long. */
export const TIMEOUT = ['--timeout', '60'];

/** What the shared scenarios need to know of one CLI; the rest of them is the same for each. */
export interface TmuxScenarioSpec {
  provider: 'codex' | 'pi' | 'copilot';
  /** Names the suite's scratch folder. */
  prefix: string;
  /** Where the first start runs, as the scenario's name says it. */
  where: string;
  /** Readies the suite before the first start: the working dir, and flags for that start. */
  prepare(suite: CliSuite): Promise<{ work: string; startArgs?: string[] }>;
  /** The native session id and the turn key, as the CLI writes them. */
  nativeId: RegExp;
  turnKey: RegExp;
  /** The CLI's own checks after the first start: its transcript, and the user's config left as it was. */
  checkStart(view: any, session: TmuxSession): Promise<void>;
  /** Every transcript file the CLI keeps under its config dir, sorted. */
  transcripts(configDir: string): Promise<string[]>;
  /** A transcript's records. */
  readTranscript(file: string): Promise<any[]>;
  /** The type of a transcript's header record (one per session). */
  headerType: string;
}

/** One logical session the scenarios build on, for the provider's own tests that follow. */
export interface TmuxSession {
  suite: CliSuite;
  work: string;
  handle: string;
  cal(args: string[], opts?: SuiteCalOptions): Promise<CalRun>;
  inspect(): Promise<any>;
}

/**
 * The scenarios every CLI in tmux goes through first, in order, in the calling describe: start
 * and remember, paste into the live pane, and native resume after the pane is gone. They set up
 * the suite (closed after the describe) and leave the session for the tests that follow.
 */
export function sharedTmuxScenarios(spec: TmuxScenarioSpec): TmuxSession {
  const session: TmuxSession = {
    suite: undefined as unknown as CliSuite,
    work: '',
    handle: '',
    cal: (args, opts) => session.suite.cal(args, opts),
    inspect: () => session.suite.inspect(session.handle),
  };
  let startArgs: string[] = [];

  beforeAll(async () => {
    session.suite = await cliSuite(spec.provider, { prefix: spec.prefix });
    const prepared = await spec.prepare(session.suite);
    session.work = prepared.work;
    startArgs = prepared.startArgs ?? [];
  });

  afterAll(async () => {
    await session.suite?.close();
  });

  it(`starts in ${spec.where} and remembers; the handle pins the binary and binds the native session and its transcript`, async () => {
    const run = await session.cal(['start', '--provider', spec.provider, '--cwd', session.work, ...startArgs, ...TIMEOUT, 'Remember the codeword KIWI.']);
    expect(run.stderr).toMatch(/^handle: [a-z0-9]+$/m);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe('OK, I will remember the codeword KIWI.');
    session.handle = handleFromStderr(run.stderr) ?? '';

    const view = await session.inspect();
    expect(view.provider.nativeSessionId).toMatch(spec.nativeId);
    expect(view.provider.tmux.paneId).toMatch(/^%\d+$/);
    expect(view.currentPaneAlive).toBe(true);
    expect(view.provider.cli.version).toBe(pinnedVersion(spec.provider));
    expect(view.turns.at(-1).turnKey).toMatch(spec.turnKey);
    await spec.checkStart(view, session);
  });

  it('continue with the pane alive pastes into it (no relaunch) and recalls', async () => {
    const before = await session.inspect();
    const run = await session.cal(['continue', session.handle, '--json', '--events', ...TIMEOUT, 'What was the codeword?']);
    expect(run.code).toBe(0);
    expect(run.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was KIWI.' });
    expect(eventsOf(run)).toEqual(['running', 'completed']);
    const after = await session.inspect();
    expect(after.panes).toHaveLength(1);
    expect(after.provider.tmux.paneId).toBe(before.provider.tmux.paneId);
    expect(after.provider.transcript.offset).toBeGreaterThan(before.provider.transcript.offset);
  });

  it('after kill-tmux, continue resumes natively: one new user message, the same transcript appended, the old pane archived', async () => {
    const { server } = session.suite;
    const before = await session.inspect();
    const sizeBefore = (await fs.stat(before.provider.transcript.path)).size;
    expect((await session.cal(['kill-tmux', session.handle])).code).toBe(0);
    server.clearLog();
    const run = await session.cal(['continue', session.handle, '--json', '--events', ...TIMEOUT, 'What was the codeword, again?']);
    expect(run.code).toBe(0);
    expect(run.json.turn.answer).toBe('The codeword was KIWI.');
    expect(eventsOf(run)).toEqual(['lost_tmux', 'resuming', 'running', 'completed']);

    const after = await session.inspect();
    expect(after.panes).toHaveLength(2);
    expect(after.panes[0]).toMatchObject({ launch: 'resume', endedAt: null });
    expect(after.panes[1].tmux.session).toBe(before.provider.tmux.session);
    expect(after.panes[1].endedAt).not.toBeNull();
    expect(after.provider.nativeSessionId).toBe(before.provider.nativeSessionId);
    expect(after.provider.transcript.path).toBe(before.provider.transcript.path);
    expect((await fs.stat(after.provider.transcript.path)).size).toBeGreaterThan(sizeBefore);
    expect(await spec.transcripts(session.suite.configDir)).toEqual([after.provider.transcript.path]);
    expect((await spec.readTranscript(after.provider.transcript.path)).filter((r) => r.type === spec.headerType)).toHaveLength(1);

    // The resumed request carried each earlier turn once and exactly one new message.
    const requests = server.turnRequests();
    expect(requests).toHaveLength(1);
    expect(requests[0]!.userMessages).toEqual(['Remember the codeword KIWI.', 'What was the codeword?', 'What was the codeword, again?']);
  });

  return session;
}
