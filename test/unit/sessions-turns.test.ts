import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CalError } from '../../src/errors.js';
import { AgentSessions, handleLockName } from '../../src/sessions/agent-sessions.js';
import { processStartTime } from '../../src/state/lock.js';
import { processExited } from '../../src/util/process-identity.js';
import type { StateStore } from '../../src/state/store.js';
import type { StructuredRunRequest, StructuredTurnResult } from '../../src/adapters/types.js';
import type { TurnRecord } from '../../src/state/turns.js';
import { kindOf } from '../support/errors.js';
import { type FakeCli, type FakeTmux, fakeAdapter, fakeSessions } from '../support/fake-engine.js';
import { removeScratch } from '../support/scratch.js';

/**
 * The agent-session layer over the engine, with a fake tmux and a fake CLI (no binaries): one
 * turn at a time per handle even after cal stopped following one (issue 20, item 2), and recover
 * settling from the transcript first whatever the clock says (issue 13, item 3).
 */
const DEAD_PID = 999_999_9;


describe('agent sessions with a fake CLI', () => {
  let root: string;
  let store: StateStore;
  let cli: FakeCli;
  let tmux: FakeTmux;
  let sessions: AgentSessions;
  const env = { PATH: process.env.PATH ?? '' };

  beforeEach(async () => {
    ({ root, store, cli, tmux, sessions } = await fakeSessions('sessions-fake'));
  });
  afterEach(async () => removeScratch(root));

  const start = (message: string) => sessions.start({ provider: 'claude-code', message, cwd: root, env, timeoutSeconds: 5 });
  const cont = (ref: string, message: string, extra: Partial<Parameters<AgentSessions['continue']>[0]> = {}) =>
    sessions.continue({ ref, message, env, timeoutSeconds: 5, ...extra });

  /** The CLI records the message and works on it; `finish()` writes its answer and end. */
  function slowCli(answer: string): { finish: () => void } {
    let finish = () => undefined as void;
    cli.behaviour = (m, pane) => {
      const id = cli.sessionOf(pane);
      finish = () => cli.write(id, [{ t: 'answer', text: answer }, { t: 'end' }]);
      return [{ t: 'user', text: m, key: `k-${m}` }];
    };
    return { finish: () => finish() };
  }

  const turnsOf = async (id: string): Promise<TurnRecord[]> => store.listTurns(id);

  it('a continue that expects another transport is non_applicable, naming why, before anything is recorded or pasted', async () => {
    const first = await start('one');
    const pasted = tmux.panes.map((p) => p.pasted.length);
    const recorded = (await turnsOf(first.handle.id)).length;
    for (const transport of ['structured', 'api']) {
      const err = await cont(first.handle.id, 'two', { transport }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CalError);
      expect(err).toMatchObject({ kind: 'non_applicable', exitCode: 8, details: { handle: first.handle.id, field: 'transport', expected: 'tmux', actual: transport } });
      expect((err as CalError).message).toContain(`runs on the tmux transport, not ${transport}`);
    }
    await expect(cont(first.handle.id, 'two', { transport: 'pigeon' })).rejects.toMatchObject({ kind: 'usage' });
    expect(tmux.panes.map((p) => p.pasted.length)).toEqual(pasted);
    expect(await turnsOf(first.handle.id)).toHaveLength(recorded);
    // The transport it is on is what a script may pass every time.
    const second = await cont(first.handle.id, 'two', { transport: 'tmux' });
    expect(second.turn).toMatchObject({ status: 'completed', answer: 'echo: two' });
  });

  it('start, paste, kill-tmux, native resume: the engine decides, the events say which', async () => {
    const first = await start('one');
    await cont(first.handle.id, 'two');
    await sessions.killTmux(first.handle.id);
    const third = await cont(first.handle.id, 'three');
    expect(third.turn).toMatchObject({ status: 'completed', answer: 'echo: three' });
    const events = (await store.readEvents(first.handle.id)).map((e) => e.event);
    expect(events).toEqual(['running', 'completed', 'running', 'completed', 'pane_killed', 'lost_tmux', 'resuming', 'running', 'completed']);
    expect(cli.received).toEqual(['one', 'two', 'three']);
  });

  it('a turn that timed out while the CLI still works holds the handle: busy at once; --wait settles it first, then sends', async () => {
    const { handle } = await start('one');
    const slow = slowCli('late answer');
    expect(await kindOf(cont(handle.id, 'slow one', { timeoutSeconds: 0.6 }))).toBe('timeout');
    expect(await kindOf(cont(handle.id, 'next'))).toBe('busy');
    expect(cli.received).toEqual(['one', 'slow one']);
    setTimeout(() => slow.finish(), 400);
    cli.behaviour = (m) => [{ t: 'user', text: m, key: `k-${m}` }, { t: 'answer', text: `echo: ${m}` }, { t: 'end' }];
    const next = await cont(handle.id, 'next', { waitSeconds: 10 });
    expect(next.turn).toMatchObject({ status: 'completed', answer: 'echo: next' });
    const turns = await turnsOf(handle.id);
    expect(turns.find((t) => t.message === 'slow one')).toMatchObject({ status: 'completed', answer: 'late answer' });
    // The busy refusal is no turn of the session (issue 41): only the turn that was sent is recorded.
    expect(turns.filter((t) => t.message === 'next').map((t) => t.status)).toEqual(['completed']);
    expect(turns.map((t) => t.seq)).toEqual([1, 2, 3]);
    expect(cli.received).toEqual(['one', 'slow one', 'next']);
  });

  it('a timed-out turn the CLI finished meanwhile is settled with its answer before the next message goes in', async () => {
    const { handle } = await start('one');
    const slow = slowCli('finished meanwhile');
    expect(await kindOf(cont(handle.id, 'slow', { timeoutSeconds: 0.6 }))).toBe('timeout');
    slow.finish();
    cli.behaviour = (m) => [{ t: 'user', text: m, key: `k-${m}` }, { t: 'answer', text: `echo: ${m}` }, { t: 'end' }];
    expect((await cont(handle.id, 'after')).turn.answer).toBe('echo: after');
    expect((await turnsOf(handle.id)).map((t) => [t.message, t.status, t.answer])).toEqual([
      ['one', 'completed', 'echo: one'],
      ['slow', 'completed', 'finished meanwhile'],
      ['after', 'completed', 'echo: after'],
    ]);
  });

  it('recover settles from the transcript first, even for a record whose clock lies in the future, and sends nothing twice', async () => {
    const { handle } = await start('one');
    const slow = slowCli('answered');
    expect(await kindOf(cont(handle.id, 'abandoned', { timeoutSeconds: 0.6 }))).toBe('timeout');
    slow.finish();
    const open = (await turnsOf(handle.id)).find((t) => t.message === 'abandoned') as TurnRecord;
    const future = new Date(Date.now() + 86_400_000).toISOString();
    await fs.writeFile(path.join(store.turnsDir(handle.id), `${open.id}.json`), JSON.stringify({ ...open, ownerPid: DEAD_PID, createdAt: future, sentAt: future }));
    // The CLI's records are now seconds older than "now", the only clock left to bound them by.
    await new Promise((r) => setTimeout(r, 2500));
    const items = await sessions.recover({ env, timeoutSeconds: 3 });
    expect(items).toEqual([expect.objectContaining({ turn: open.id, action: 'settled_from_transcript', status: 'completed', answer: 'answered' })]);
    expect(cli.received).toEqual(['one', 'abandoned']);
  });

  it('recover: what the transcript settles is settled before anything is waited for', async () => {
    const a = await start('a1');
    const b = await start('b1');
    const slowA = slowCli('A late');
    expect(await kindOf(cont(a.handle.id, 'a-slow', { timeoutSeconds: 0.6 }))).toBe('timeout');
    const slowB = slowCli('B done');
    expect(await kindOf(cont(b.handle.id, 'b-slow', { timeoutSeconds: 0.6 }))).toBe('timeout');
    slowB.finish();
    for (const h of [a.handle.id, b.handle.id]) {
      const open = (await turnsOf(h)).find((t) => t.status === 'running') as TurnRecord;
      await fs.writeFile(path.join(store.turnsDir(h), `${open.id}.json`), JSON.stringify({ ...open, ownerPid: DEAD_PID }));
    }
    const order: string[] = [];
    setTimeout(() => slowA.finish(), 600);
    const items = await sessions.recover({ env, timeoutSeconds: 5, onEvent: (e) => e.event === 'completed' && order.push(e.handle) });
    expect(order).toEqual([b.handle.id, a.handle.id]);
    expect(items.map((i) => [i.action, i.answer])).toEqual([
      ['settled_from_transcript', 'B done'],
      ['waited_for_cli', 'A late'],
    ]);
  });

  /** A structured fake: the first turn answers and records itself; later ones as `later` says. */
  function structuredSessions(later: (req: StructuredRunRequest, id: string) => Promise<StructuredTurnResult>): { runs: () => number } {
    let runs = 0;
    const adapter = fakeAdapter(cli, {
      structured: async (req) => {
        runs++;
        const id = req.sessionId ?? 'structured-1';
        if (runs > 1) return later(req, id);
        cli.write(id, [{ t: 'user', text: req.message, key: 'k1' }, { t: 'answer', text: 'first' }, { t: 'end' }]);
        return { sessionId: id, status: 'completed', answer: 'first', error: null, tools: [], transcriptPath: cli.transcript(id) };
      },
    });
    sessions = new AgentSessions(store, { tmux: () => tmux, adapter: () => adapter });
    return { runs: () => runs };
  }

  async function orphanRunningTurn(handleId: string): Promise<void> {
    const open = (await turnsOf(handleId)).find((t) => t.status === 'running') as TurnRecord;
    await fs.writeFile(path.join(store.turnsDir(handleId), `${open.id}.json`), JSON.stringify({ ...open, ownerPid: DEAD_PID }));
  }

  it('a structured turn that ended on its end event while its CLI still ran: the next message waits for that process to exit', async () => {
    const lingering: { pid: number }[] = [];
    let goneAtSend: boolean | null = null;
    const fake = structuredSessions(async (req, id) => {
      if (lingering.length === 1) {
        // The second turn after the start: the one that must wait. (Gone: exited, its zombie
        // counts; this process's own exit event for it may come a moment later.)
        goneAtSend = processExited(lingering[0]?.pid as number);
        cli.write(id, [{ t: 'user', text: req.message, key: 'k3' }, { t: 'answer', text: 'third' }, { t: 'end' }]);
        return { sessionId: id, status: 'completed', answer: 'third', error: null, tools: [], transcriptPath: cli.transcript(id) };
      }
      // The CLI answers, then goes on for a while before it exits by itself.
      const proc = spawn('sleep', ['0.8'], { stdio: 'ignore' });
      const entry = { pid: proc.pid as number };
      lingering.push(entry);
      req.onSpawned?.(entry.pid);
      cli.write(id, [{ t: 'user', text: req.message, key: 'k2' }, { t: 'answer', text: 'second' }, { t: 'end' }]);
      return { sessionId: id, status: 'completed', answer: 'second', error: null, tools: [], transcriptPath: cli.transcript(id), cliRunning: true };
    });
    const first = await sessions.start({ provider: 'claude-code', transport: 'structured', message: 'one', cwd: root, env, timeoutSeconds: 5 });
    const second = await cont(first.handle.id, 'two');
    expect(second.turn).toMatchObject({ status: 'completed', answer: 'second' });
    // On record while it finishes, so the next turn (in this process or another) can wait for it.
    expect((await store.loadHandle(first.handle.id)).provider.cliProcess).toMatchObject({ pid: lingering[0]?.pid });
    const third = await cont(first.handle.id, 'three');
    expect(third.turn).toMatchObject({ status: 'completed', answer: 'third' });
    expect(fake.runs()).toBe(3);
    expect(goneAtSend).toBe(true);
    expect((await store.loadHandle(first.handle.id)).provider.cliProcess).toBeNull();
  });

  it('recover: a structured turn whose CLI process still runs is waited for, never sent again', async () => {
    let finish = () => undefined as void;
    const fake = structuredSessions(async (req, id) => {
      finish = () => cli.write(id, [{ t: 'user', text: req.message, key: 'k2' }, { t: 'answer', text: 'late' }, { t: 'end' }]);
      throw new CalError('timeout', 'fake: cal stopped following');
    });
    const first = await sessions.start({ provider: 'claude-code', transport: 'structured', message: 'one', cwd: root, env, timeoutSeconds: 5 });
    expect(await kindOf(cont(first.handle.id, 'two'))).toBe('timeout');
    await orphanRunningTurn(first.handle.id);
    // As a cal killed mid-turn leaves it: the CLI's process on the handle (this very process, alive).
    const stored = await store.loadHandle(first.handle.id);
    await store.saveHandle({ ...stored, provider: { ...stored.provider, cliProcess: { pid: process.pid, startTime: processStartTime(process.pid) } } });
    setTimeout(() => finish(), 300);
    const items = await sessions.recover({ env, timeoutSeconds: 5 });
    expect(items.map((i) => [i.action, i.status, i.answer])).toEqual([['waited_for_cli', 'completed', 'late']]);
    expect(fake.runs()).toBe(2);
  });

  it('recover: a structured turn running with no live CLI on record and nothing in the transcript is lost, never sent again', async () => {
    const fake = structuredSessions(async () => {
      throw new CalError('timeout', 'fake: cal stopped following before the CLI recorded anything');
    });
    const first = await sessions.start({ provider: 'claude-code', transport: 'structured', message: 'one', cwd: root, env, timeoutSeconds: 5 });
    expect(await kindOf(cont(first.handle.id, 'two'))).toBe('timeout');
    await orphanRunningTurn(first.handle.id);
    const items = await sessions.recover({ env, timeoutSeconds: 5 });
    expect(items.map((i) => [i.action, i.status])).toEqual([['marked_lost', 'lost']]);
    expect(fake.runs()).toBe(2);
  });

  it('a structured turn the caller cancels before the CLI took the message is interrupted (11), not failed, whatever the CLI said; uncancelled, the same failure stays turn_failed', async () => {
    const cancel = new AbortController();
    // As Copilot 1.0.102 does on a SIGINT while it loads a resumed session: its own words, exit 0, nothing taken.
    structuredSessions(async (req) => {
      // The cancel comes while the CLI starts: it fails the prompt on the SIGINT.
      if (req.message === 'cancelled') cancel.abort();
      throw new CalError('turn_failed', 'copilot failed before it took the message (exit 0): queued work belongs to a retired queue or model intent');
    });
    const first = await sessions.start({ provider: 'claude-code', transport: 'structured', message: 'one', cwd: root, env, timeoutSeconds: 5 });
    expect(await kindOf(cont(first.handle.id, 'plain failure'))).toBe('turn_failed');
    const err = await cont(first.handle.id, 'cancelled', { signal: cancel.signal }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CalError);
    expect((err as CalError).kind).toBe('interrupted');
    expect((err as CalError).message).toContain('before claude-code took the message');
    expect((await turnsOf(first.handle.id)).map((t) => t.status)).toEqual(['completed', 'failed', 'interrupted']);
  });

  /**
   * A structured fake with an early start: what the turn record of the continue said when the CLI
   * was started and when it was sent its message, and whether the start was used or discarded.
   */
  function earlyStartSessions(): { log: string[] } {
    const log: string[] = [];
    let runs = 0;
    const lastTurn = async (): Promise<string> => {
      const handles = await store.listHandles();
      const turns = (await Promise.all(handles.map((h) => turnsOf(h.id)))).flat().sort((a, b) => a.seq - b.seq);
      const last = turns.at(-1);
      return last ? `t${last.seq} ${last.status}` : 'none';
    };
    let firstId: string | null = null;
    const answer = (req: StructuredRunRequest): StructuredTurnResult => {
      const id = req.sessionId ?? 'structured-1';
      firstId ??= id;
      runs++;
      cli.write(id, [{ t: 'user', text: req.message, key: `k${runs}` }, { t: 'answer', text: `answer ${runs}` }, { t: 'end' }]);
      return { sessionId: id, status: 'completed', answer: `answer ${runs}`, error: null, tools: [], transcriptPath: cli.transcript(id) };
    };
    const adapter = fakeAdapter(cli, {
      structured: async (req) => {
        log.push(`launched with ${await lastTurn()}`);
        return answer(req);
      },
      structuredStart: (req) => {
        // Synchronous, as the real start is: how many turn records the handle has at this moment.
        const handles = readdirSync(store.layout.handles).filter((f) => f.endsWith('.json'));
        const records = handles.flatMap((f) => readdirSync(store.turnsDir(f.slice(0, -'.json'.length))));
        log.push(`started to ${req.mode} ${req.sessionId === firstId ? 'the first turn\'s session' : req.sessionId} with ${records.length} turn record(s)`);
        let used = false;
        return {
          run: async (run) => {
            used = true;
            log.push(`sent with ${await lastTurn()}`);
            return answer(run);
          },
          discard: () => {
            if (!used) log.push('discarded');
          },
        };
      },
    });
    sessions = new AgentSessions(store, { tmux: () => tmux, adapter: () => adapter });
    return { log };
  }

  it('a resumed structured turn: its CLI is started before the turn record, and sent the message once the turn is running on disk', async () => {
    const fake = earlyStartSessions();
    const first = await sessions.start({ provider: 'claude-code', transport: 'structured', message: 'one', cwd: root, env, timeoutSeconds: 5 });
    const second = await cont(first.handle.id, 'two');
    expect(second.turn).toMatchObject({ status: 'completed', answer: 'answer 2' });
    // The first turn has no session to resume: launched as usual, after its running record.
    expect(fake.log).toEqual(['launched with t1 running', "started to resume the first turn's session with 1 turn record(s)", 'sent with t2 running']);
  });

  it('a resumed structured turn on a busy handle: the CLI started ahead is discarded, nothing is sent', async () => {
    const fake = earlyStartSessions();
    const first = await sessions.start({ provider: 'claude-code', transport: 'structured', message: 'one', cwd: root, env, timeoutSeconds: 5 });
    const held = await store.locks.acquire(handleLockName(first.handle.id));
    try {
      expect(await kindOf(cont(first.handle.id, 'two'))).toBe('busy');
    } finally {
      await held.release();
    }
    expect(fake.log).toEqual(['launched with t1 running', "started to resume the first turn's session with 1 turn record(s)", 'discarded']);
  });

  it('recover reports a turn record it cannot read instead of skipping it', async () => {
    const { handle } = await start('one');
    await fs.writeFile(path.join(store.turnsDir(handle.id), 't0002-tornab.json'), '{"schemaVersion":1,');
    const items = await sessions.recover({ env });
    expect(items).toEqual([expect.objectContaining({ action: 'skipped_unreadable', turn: expect.stringContaining('t0002-tornab.json') })]);
  });
});
