import { spawn, type ChildProcess } from 'node:child_process';
import { statSync } from 'node:fs';
import os from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { decideRoute, preflight, runProviderTurn, type RouteFacts } from '../../src/engine/decision.js';
import { CalError } from '../../src/errors.js';
import type { ProviderHandle, StabilityFingerprint } from '../../src/handles/schema.js';
import type { TurnRequest } from '../../src/engine/types.js';
import { kindOf } from '../support/errors.js';
import { fakeMessageGuard, fakeWorld, providerHandle, type FakePane } from '../support/fake-engine.js';
import { scratchDirSync } from '../support/scratch.js';

/**
 * Design §4 (the continuation decision) and §5 (how a turn ends), row by row, with a fake tmux
 * and a fake CLI adapter: no binary, no tmux. The real-CLI end-to-end tests remain the proof
 * that each adapter keeps these rows; these pin the engine's own logic.
 */
const facts = (patch: Partial<RouteFacts>): RouteFacts => ({
  transport: 'tmux',
  intent: 'deliver',
  hasPane: false,
  paneAlive: false,
  hasNativeId: false,
  hasTranscript: false,
  ...patch,
});


describe('§4 decision table (pure)', () => {
  it.each([
    ['1: API-only', facts({ transport: 'api' }), { kind: 'non_applicable' }],
    ['6: structured, first turn', facts({ transport: 'structured' }), { kind: 'structured' }],
    ['6: structured, later turn', facts({ transport: 'structured', hasNativeId: true, hasTranscript: true }), { kind: 'structured' }],
    ['3: live pane', facts({ hasPane: true, paneAlive: true, hasNativeId: true, hasTranscript: true }), { kind: 'paste' }],
    ['3: live pane before the CLI recorded anything', facts({ hasPane: true, paneAlive: true }), { kind: 'paste' }],
    ['4: pane gone, native id', facts({ hasPane: true, hasNativeId: true, hasTranscript: true }), { kind: 'launch', mode: 'resume', lostPane: true }],
    ['4: no pane on record (recover), native id', facts({ hasNativeId: true, hasTranscript: true }), { kind: 'launch', mode: 'resume', lostPane: false }],
    ['5: never delivered: fresh launch', facts({}), { kind: 'launch', mode: 'fresh', lostPane: false }],
    ['5: pane gone, nothing recorded', facts({ hasPane: true }), { kind: 'non_continuable', lostPane: true }],
    ['await a recorded turn', facts({ intent: 'await', hasPane: true, paneAlive: true }), { kind: 'await' }],
    ['6: await a structured turn its CLI already has (never a second send)', facts({ transport: 'structured', intent: 'await', hasNativeId: true, hasTranscript: true }), { kind: 'structured_await' }],
  ])('row %s', (_name, input, route) => {
    expect(decideRoute(input)).toEqual(route);
  });
});

describe('§4 rows through the engine (fake tmux, fake CLI)', () => {
  it('row 1: an API provider has no provider-level continuation', async () => {
    const w = fakeWorld();
    expect(await kindOf(runProviderTurn(w.request(providerHandle({ transport: 'api' }), 'hi')))).toBe('non_applicable');
    expect(w.cli.received).toEqual([]);
  });

  it('row 2: a working directory that is not the recorded one is stale_handle, named, before anything is sent', async () => {
    const w = fakeWorld();
    const dir = scratchDirSync('stale');
    const st = statSync(dir);
    const recorded: StabilityFingerprint = {
      workingDir: { path: dir, realPath: dir, dev: st.dev, ino: st.ino },
      model: 'm1',
      systemPromptHash: null,
      systemPrompt: null,
      mcpConfigHash: null,
      mcpConfigPath: null,
      toolPolicy: 'default',
    };
    const req = w.request(providerHandle(), 'hi', { stability: { recorded, requested: { cwd: os.tmpdir() } } });
    const err = await preflight(req).catch((e: CalError) => e);
    expect(err).toBeInstanceOf(CalError);
    expect((err as CalError).kind).toBe('stale_handle');
    expect((err as CalError).details.field).toBe('workingDir');
    const model = await preflight(w.request(providerHandle(), 'hi', { stability: { recorded, requested: { model: 'm2' } } })).catch((e: CalError) => e);
    expect((model as CalError).details).toMatchObject({ field: 'model', expected: 'm1', actual: 'm2' });
    expect(w.hooks.events).toEqual(['stale_handle', 'stale_handle']);
    expect(w.cli.received).toEqual([]);
  });

  it('row 5 (first turn): no pane and no native id launches fresh, with the message in the launch', async () => {
    const w = fakeWorld();
    const { handle, outcome } = await runProviderTurn(w.request(providerHandle(), 'remember TANGO'));
    expect(outcome).toMatchObject({ status: 'completed', answer: 'echo: remember TANGO' });
    expect(w.adapter.launches.map((l) => l.mode)).toEqual(['fresh']);
    expect(handle.nativeSessionId).toBe('sess-1');
    expect(handle.tmux?.panePid).toBeGreaterThan(0);
    // The whole turn came in one read: no `running` record between the send and the end.
    expect(w.hooks.statuses).toEqual(['sending', 'sent']);
    expect(w.hooks.events).toContain('running');
  });

  it('a turn whose end comes in a later read than its message is recorded running in between', async () => {
    const w = fakeWorld();
    let sessionId = '';
    w.cli.behaviour = (message, pane) => {
      sessionId = w.cli.sessionOf(pane);
      return [{ t: 'user', text: message, key: 'k1' }];
    };
    const turn = runProviderTurn(w.request(providerHandle(), 'slow one'));
    for (let i = 0; i < 100 && !w.hooks.statuses.includes('running'); i++) await new Promise((r) => setTimeout(r, 20));
    expect(w.hooks.statuses).toEqual(['sending', 'sent', 'running']);
    w.cli.write(sessionId, [{ t: 'answer', text: 'echo: slow one' }, { t: 'end' }]);
    const { outcome } = await turn;
    expect(outcome).toMatchObject({ status: 'completed', answer: 'echo: slow one' });
    expect(w.hooks.statuses).toEqual(['sending', 'sent', 'running']);
  });

  it('row 3: a live pane gets the message pasted; nothing is launched', async () => {
    const w = fakeWorld();
    const first = await runProviderTurn(w.request(providerHandle(), 'one'));
    const second = await runProviderTurn(w.request(first.handle, '!two'));
    expect(second.outcome).toMatchObject({ status: 'completed', answer: 'echo:  !two' });
    expect(w.adapter.launches).toHaveLength(1);
    // The adapter's guard for a leading '!' is what is pasted.
    expect(w.tmux.panes[0]?.pasted).toEqual([' !two']);
  });

  it('row 4: pane gone with a native id → lost_tmux, archived, native resume, only the new message sent', async () => {
    const w = fakeWorld();
    const first = await runProviderTurn(w.request(providerHandle(), 'one'));
    await w.tmux.killSession(first.handle.tmux?.session as string);
    w.hooks.events.length = 0;
    const second = await runProviderTurn(w.request(first.handle, 'two', { paneName: 'cal-h-2' }));
    expect(second.outcome.status).toBe('completed');
    expect(w.hooks.events).toEqual(['lost_tmux', 'resuming', 'running']);
    expect(w.adapter.launches.map((l) => [l.mode, l.sessionId])).toEqual([
      ['fresh', 'sess-1'],
      ['resume', 'sess-1'],
    ]);
    expect(w.cli.received).toEqual(['one', 'two']);
    expect(w.hooks.changes.some((c) => c.archived?.reason === 'pane gone')).toBe(true);
  });

  it('row 4: a pane id reused by another session in a new tmux server is not this session’s pane', async () => {
    const w = fakeWorld();
    const a = await runProviderTurn(w.request(providerHandle({ pendingSessionId: 'A' }), 'I am A', { paneName: 'cal-a-1' }));
    w.tmux.restartServer();
    // B continues first in the new server and gets pane %0, the id A's handle still records.
    const b = await runProviderTurn(w.request(providerHandle({ pendingSessionId: 'B' }), 'I am B', { paneName: 'cal-b-1' }));
    expect(b.handle.tmux?.paneId).toBe(a.handle.tmux?.paneId);
    const again = await runProviderTurn(w.request(a.handle, 'A again', { paneName: 'cal-a-2' }));
    expect(again.outcome.status).toBe('completed');
    // A was resumed in a pane of its own; B's pane never received A's message.
    expect(w.tmux.panes.find((p) => p.session === 'cal-b-1')?.pasted).toEqual([]);
    expect(w.adapter.launches.at(-1)).toMatchObject({ mode: 'resume', sessionId: 'A' });
  });

  it('row 5: a pane that got the first message but never recorded it cannot be resumed (non_continuable)', async () => {
    const w = fakeWorld();
    const handle = providerHandle({ tmux: { socket: w.tmux.socket, session: 'cal-h-1', paneId: '%9' } });
    expect(await kindOf(runProviderTurn(w.request(handle, 'hi', { paneName: 'cal-h-2' })))).toBe('non_continuable');
    expect(w.hooks.events).toEqual(['lost_tmux']);
    expect(w.cli.received).toEqual([]);
  });

  it('row 6: the structured transport runs the CLI once per turn, with its own resume after the first', async () => {
    const runs: string[] = [];
    const w = fakeWorld({
      structured: async (req) => {
        runs.push(`${req.mode}:${req.sessionId}:${req.message}`);
        return { sessionId: 'S1', status: 'completed', answer: `ok ${req.message}`, error: null, tools: [], transcriptPath: null };
      },
    });
    const first = await runProviderTurn(w.request(providerHandle({ transport: 'structured' }), '\u001b[31mexact'));
    const second = await runProviderTurn(w.request(first.handle, 'two'));
    expect(second.outcome.answer).toBe('ok two');
    // No terminal: the text stays exact (no escape stripping).
    expect(runs).toEqual(['fresh:sess-1:\u001b[31mexact', 'resume:S1:two']);
    expect(w.tmux.panes).toEqual([]);
  });

  it('row 6: a turn the adapter fails after the CLI’s end event keeps a CLI that still runs on record, and drops one that has ended', async () => {
    const cli = spawn('sleep', ['60'], { stdio: 'ignore' });
    const exited = new Promise((r) => cli.once('exit', r));
    try {
      const pid = cli.pid as number;
      const w = fakeWorld({
        structured: async (req) => {
          req.onSpawned?.(pid);
          throw new CalError('resume_unavailable', 'the CLI said: no conversation found');
        },
      });
      expect(await kindOf(runProviderTurn(w.request(providerHandle({ transport: 'structured' }), 'one')))).toBe('resume_unavailable');
      expect(w.hooks.handles.at(-1)?.cliProcess?.pid).toBe(pid);
      cli.kill('SIGKILL');
      await exited;
      expect(await kindOf(runProviderTurn(w.request(providerHandle({ transport: 'structured' }), 'two')))).toBe('resume_unavailable');
      expect(w.hooks.handles.at(-1)?.cliProcess).toBeNull();
    } finally {
      cli.kill('SIGKILL');
    }
  });

  it('row 7: the CLI exits on a resume before it records the message → resume_unavailable', async () => {
    const w = fakeWorld();
    const first = await runProviderTurn(w.request(providerHandle(), 'one'));
    await w.tmux.killSession(first.handle.tmux?.session as string);
    w.cli.behaviour = () => 'die';
    expect(await kindOf(runProviderTurn(w.request(first.handle, 'two', { paneName: 'cal-h-2' })))).toBe('resume_unavailable');
    expect(w.hooks.events).toContain('resume_unavailable');
  });

  it('a message the terminal would run as a command is refused on the text the CLI would see, before anything is sent', async () => {
    const w = fakeWorld({ messageGuard: { ...fakeMessageGuard, leads: { ...fakeMessageGuard.leads, '/': { means: 'slash command', readAt: 'visible', action: 'refuse' } } } });
    // The escape sequence is stripped first, so the refusal sees "/exit".
    expect(await kindOf(runProviderTurn(w.request(providerHandle(), '\u001b[0m/exit')))).toBe('usage');
    expect(await kindOf(runProviderTurn(w.request(providerHandle(), '\u001b[0m')))).toBe('usage');
    expect(w.cli.received).toEqual([]);
  });
});

describe('§5 turn endings (fake tmux, fake CLI)', () => {
  const ending = async (records: (message: string) => Record<string, unknown>[] | 'die-after-recording') => {
    const w = fakeWorld();
    w.cli.behaviour = (m) => records(m);
    return runProviderTurn(w.request(providerHandle(), 'go'));
  };

  it('completed: the answer from the transcript', async () => {
    const { outcome } = await ending((m) => [{ t: 'user', text: m, key: 'k' }, { t: 'answer', text: 'A' }, { t: 'end' }]);
    expect(outcome).toMatchObject({ status: 'completed', answer: 'A', turnKey: 'k' });
  });

  it('failed: the CLI’s own error record, never an empty success', async () => {
    const { outcome } = await ending((m) => [{ t: 'user', text: m, key: 'k' }, { t: 'error', text: 'HTTP 500' }]);
    expect(outcome).toMatchObject({ status: 'failed', answer: null, error: 'HTTP 500' });
  });

  it('interrupted: the CLI’s interrupt record', async () => {
    const { outcome } = await ending((m) => [{ t: 'user', text: m, key: 'k' }, { t: 'interrupt' }]);
    expect(outcome.status).toBe('interrupted');
  });

  it('lost: the pane dies after the CLI recorded the message, before any end record', async () => {
    const { outcome, handle } = await ending(() => 'die-after-recording');
    expect(outcome.status).toBe('lost');
    expect(handle.status).toBe('lost');
  });

  it('a newer prompt closes a dangling turn', async () => {
    const { outcome } = await ending((m) => [{ t: 'user', text: m, key: 'k1' }, { t: 'user', text: 'someone else', key: 'k2' }]);
    expect(outcome).toMatchObject({ status: 'lost', error: expect.stringMatching(/newer prompt/) });
  });

  it('schema drift: a transcript of records of no known shape is a typed error, not an empty answer', async () => {
    const w = fakeWorld();
    w.cli.behaviour = () => [{ kind: 'renamed-user', body: 'go' }, { kind: 'renamed-answer' }];
    const err = await runProviderTurn(w.request(providerHandle(), 'go', { timeoutMs: 1500 })).catch((e: CalError) => e);
    expect(err).toBeInstanceOf(CalError);
    expect((err as CalError).kind).toBe('cli_unsupported');
    expect((err as CalError).message).toMatch(/no shape cal knows/);
  });

  it('the stored offset moves past exactly this turn, so the next turn with the same text binds its own records', async () => {
    const w = fakeWorld();
    const first = await runProviderTurn(w.request(providerHandle(), 'same'));
    w.cli.behaviour = (m) => [{ t: 'user', text: m, key: 'k2' }, { t: 'answer', text: 'second answer' }, { t: 'end' }];
    const second = await runProviderTurn(w.request(first.handle, 'same'));
    expect(second.outcome).toMatchObject({ answer: 'second answer', turnKey: 'k2' });
    expect(second.handle.transcript?.offset).toBeGreaterThan(first.handle.transcript?.offset ?? 0);
  });

  it('a cancelled turn interrupts the CLI as a person would (Escape) and settles from its record', async () => {
    const w = fakeWorld();
    w.cli.behaviour = (m) => [{ t: 'user', text: m, key: 'k' }];
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    const { outcome } = await runProviderTurn(w.request(providerHandle(), 'long job', { signal: ac.signal }));
    expect(outcome.status).toBe('interrupted');
    expect(w.tmux.panes[0]?.keys).toContainEqual(['Escape']);
  });

  it('a request the CLI holds with nothing recorded: the adapter’s stall keys make it record its error', async () => {
    // Gemini CLI shows a dialog over a model that keeps failing and records nothing until it is
    // answered; the keys it declares answer it, and the CLI's own error record settles the turn.
    const w = fakeWorld({ stallKeys: { afterMs: 200, keys: ['Down', 'Enter'] } });
    w.cli.behaviour = (m) => [{ t: 'user', text: m, key: 'k' }];
    w.cli.onKeys = (keys) => (keys.join(' ') === 'Down Enter' ? [{ t: 'error', text: '[API Error: 500]' }] : []);
    const { outcome } = await runProviderTurn(w.request(providerHandle(), 'fail please'));
    expect(outcome).toMatchObject({ status: 'failed', answer: null, error: '[API Error: 500]' });
    expect(w.tmux.panes[0]?.keys).toEqual([['Down', 'Enter']]);
  });

  it('stall keys are never pressed while tools run (the model answered), nor by an adapter that declares none', async () => {
    const tools = fakeWorld({ stallKeys: { afterMs: 100, keys: ['Down', 'Enter'] } });
    tools.cli.behaviour = (m) => [{ t: 'user', text: m, key: 'k' }, { t: 'answer', text: 'running a tool' }];
    expect(await kindOf(runProviderTurn(tools.request(providerHandle(), 'tool turn', { timeoutMs: 800 })))).toBe('timeout');
    expect(tools.tmux.panes[0]?.keys).toEqual([]);

    const none = fakeWorld();
    none.cli.behaviour = (m) => [{ t: 'user', text: m, key: 'k' }];
    expect(await kindOf(runProviderTurn(none.request(providerHandle(), 'slow model', { timeoutMs: 800 })))).toBe('timeout');
    expect(none.tmux.panes[0]?.keys).toEqual([]);
  });

  it('a TUI that puts an interrupted or failed prompt back in its input gets it emptied by the adapter’s keys (Qwen Code), and no other adapter gets any', async () => {
    const interrupted = fakeWorld({ afterInterruptKeys: ['C-c'], afterFailKeys: ['Escape'] });
    interrupted.cli.behaviour = (m) => [{ t: 'user', text: m, key: 'k' }, { t: 'interrupt' }];
    expect((await runProviderTurn(interrupted.request(providerHandle(), 'cut short'))).outcome.status).toBe('interrupted');
    expect(interrupted.tmux.panes[0]?.keys).toEqual([['C-c']]);

    const failed = fakeWorld({ afterInterruptKeys: ['C-c'], afterFailKeys: ['Escape'] });
    failed.cli.behaviour = (m) => [{ t: 'user', text: m, key: 'k' }, { t: 'error', text: '500 Mock internal server error' }];
    expect((await runProviderTurn(failed.request(providerHandle(), 'fails'))).outcome.status).toBe('failed');
    // Escape stops the CLI's own retries; Ctrl+C then empties the prompt it put back.
    expect(failed.tmux.panes[0]?.keys).toEqual([['Escape'], ['C-c']]);

    const plain = fakeWorld();
    plain.cli.behaviour = (m) => [{ t: 'user', text: m, key: 'k' }, { t: 'error', text: 'boom' }];
    expect((await runProviderTurn(plain.request(providerHandle(), 'fails too'))).outcome.status).toBe('failed');
    expect(plain.tmux.panes[0]?.keys).toEqual([]);
  });

  it('timeout: a turn with no end leaves the stored offset where it began', async () => {
    const w = fakeWorld();
    w.cli.behaviour = (m) => [{ t: 'user', text: m, key: 'k' }];
    const err = await runProviderTurn(w.request(providerHandle(), 'slow', { timeoutMs: 600 })).catch((e: CalError) => e);
    expect((err as CalError).kind).toBe('timeout');
    expect(w.hooks.handles.at(-1)?.transcript?.offset).toBe(0);
  });
});

describe('how the engine watches a pane while a turn runs (fake tmux, a real process for the CLI)', () => {
  /**
   * A fake world whose next pane's CLI is a real process of the test's own (alive until killed),
   * and whose fake CLI records each message and never ends its turn. The process is killed after
   * the test.
   */
  const children: ChildProcess[] = [];
  afterEach(() => children.splice(0).forEach((c) => c.kill('SIGKILL')));
  const worldWithCliProcess = () => {
    const child = spawn('sleep', ['60'], { stdio: 'ignore' });
    children.push(child);
    const w = fakeWorld();
    w.tmux.nextPaneProcess = child.pid as number;
    w.cli.behaviour = (m) => [{ t: 'user', text: m, key: 'k' }];
    const killCli = async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    };
    return { w, killCli, longTurn: (timeoutMs = 20_000) => runProviderTurn(w.request(providerHandle(), 'long turn', { timeoutMs })) };
  };

  it('asks tmux once while the CLI process runs, and sees the pane die at the next check after that process ends', async () => {
    const { w, killCli, longTurn } = worldWithCliProcess();
    const turn = longTurn();
    await new Promise((r) => setTimeout(r, 2200));
    // One look (the first, which ties the process to the pane), where every 500 ms was four.
    expect(w.tmux.paneStateCalls).toBe(1);
    await killCli();
    (w.tmux.panes[0] as FakePane).dead = true;
    const t0 = Date.now();
    expect((await turn).outcome.status).toBe('lost');
    expect(Date.now() - t0).toBeLessThan(1500);
  });

  it('a pane that went away around a CLI process that lives on is still found, by a look at tmux every few seconds', async () => {
    const { w, longTurn } = worldWithCliProcess();
    const turn = longTurn();
    await new Promise((r) => setTimeout(r, 1000));
    await w.tmux.killServer();
    const t0 = Date.now();
    expect((await turn).outcome.status).toBe('lost');
    expect(Date.now() - t0).toBeLessThan(6000);
  });

  it('a turn followed again (recover) asks tmux at its first look, whatever process the recorded pid names now', async () => {
    const { w, longTurn } = worldWithCliProcess();
    const sentAt = new Date(Date.now() - 1000);
    expect(await kindOf(longTurn(700))).toBe('timeout');
    // The pane is gone while the process lives on: a turn followed again (recover) asks tmux at once.
    await w.tmux.killServer();
    const handle = w.hooks.handles.at(-1) as ProviderHandle;
    const t0 = Date.now();
    const again = await runProviderTurn(w.request(handle, 'long turn', { intent: { kind: 'await', sentAt } satisfies TurnRequest['intent'], timeoutMs: 20_000 }));
    expect(Date.now() - t0).toBeLessThan(1500);
    expect(again.outcome.status).toBe('lost');
  });
});
