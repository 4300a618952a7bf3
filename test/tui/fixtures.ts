import type { AgentSessionHandle } from '../../src/handles/schema.js';
import type { HandleSummary, HandleView, PaneView } from '../../src/sessions/agent-sessions.js';
import type { EventRecord } from '../../src/state/store.js';
import type { TurnRecord } from '../../src/state/turns.js';
import type { CertificationInfo, InspectSource, NewSessionRequest, TurnOutcome, TurnWatch } from '../../src/tui/source.js';

/** Fixed clock for the views: 2026-01-01T12:00:00Z. */
export const NOW = Date.parse('2026-01-01T12:00:00Z');
export const ago = (seconds: number) => new Date(NOW - seconds * 1000).toISOString();

export function handle(id: string, patch: Partial<AgentSessionHandle> = {}): AgentSessionHandle {
  const dir = { path: '/work/proj', realPath: '/work/proj', dev: 1, ino: 2 };
  return {
    schemaVersion: 1,
    id,
    name: null,
    scope: 'chat',
    ownerId: null,
    correlationId: null,
    config: { workingDir: dir, model: null, systemPromptHash: null, systemPrompt: null, mcpConfigHash: null, mcpConfigPath: null, toolPolicy: 'default' },
    provider: {
      provider: 'claude-code',
      transport: 'tmux',
      nativeSessionId: '11111111-2222-3333-4444-555555555555',
      pendingSessionId: null,
      tmux: { socket: '/state/tmux/s', session: `cal-${id}-2`, paneId: '%7' },
      workingDir: dir,
      projectDirId: null,
      model: null,
      status: 'idle',
      cli: { path: '/bin/claude', realPath: '/opt/claude/claude.exe', version: '2.1.328' },
      transcript: { path: '/home/.claude/projects/x/y.jsonl', offset: 100 },
      envNames: [],
    },
    panes: [],
    createdAt: ago(600),
    updatedAt: ago(30),
    ...patch,
  } as AgentSessionHandle;
}

export function turn(seq: number, patch: Partial<TurnRecord> = {}): TurnRecord {
  return {
    schemaVersion: 1,
    id: `t000${seq}-abcdef`,
    handleId: 'h',
    seq,
    message: `message ${seq}`,
    status: 'completed',
    turnKey: `key-${seq}`,
    answer: `answer ${seq}`,
    error: null,
    tools: [],
    ownerPid: 1,
    ownerStartTime: null,
    correlationId: null,
    sentAt: ago(500 - seq),
    createdAt: ago(500 - seq),
    updatedAt: ago(400 - seq),
    ...patch,
  };
}

export const currentPane: PaneView = {
  label: 'cal-abc-2 %7',
  current: true,
  alive: true,
  launch: 'resume',
  startedAt: ago(120),
  endedAt: null,
  endReason: null,
};

export const archivedPane: PaneView = {
  label: 'cal-abc-1 %3',
  current: false,
  alive: false,
  launch: 'fresh',
  startedAt: ago(600),
  endedAt: ago(180),
  endReason: 'pane gone',
};

export function event(event: string, seconds: number, patch: Partial<EventRecord> = {}): EventRecord {
  return { time: ago(seconds), handle: 'abc', event, ...patch };
}

export function view(patch: Partial<HandleView> = {}): HandleView {
  return {
    handle: handle('abc123def0', { name: 'refactor' }),
    panes: [currentPane, archivedPane],
    currentPaneAlive: true,
    turns: [
      turn(1, { message: 'Remember the codeword TANGO.', answer: 'OK, I will remember the codeword TANGO.' }),
      turn(2, {
        message: 'Run it [[cal:shell=sleep 2; echo hi]]',
        answer: 'Tool finished: hi',
        tools: [{ kind: 'shell', name: 'sleep 2; echo hi', input: { command: 'sleep 2; echo hi' }, output: 'hi', status: 'completed' }],
      }),
      turn(3, { status: 'failed', answer: null, error: { kind: 'turn_failed', message: 'API Error: 500' } }),
    ],
    events: [
      event('running', 590, { turn: 't0001-abcdef' }),
      event('completed', 580, { turn: 't0001-abcdef' }),
      event('lost_tmux', 180, { turn: 't0002-abcdef', detail: { pane: '%3' } }),
      event('resuming', 179, { turn: 't0002-abcdef', detail: { nativeSessionId: '11111111-2222-3333-4444-555555555555' } }),
      event('failed', 10, { turn: 't0003-abcdef', detail: { kind: 'turn_failed', message: 'API Error: 500' } }),
    ],
    ...patch,
  };
}

export function summary(id: string, patch: Partial<AgentSessionHandle> = {}, last: TurnRecord | null = turn(1)): HandleSummary {
  return { handle: handle(id, patch), lastTurn: last, paneAlive: false };
}

/** A scripted source: tests change its fields and the app sees the change on its next poll. */
export class FakeSource implements InspectSource {
  summaries: HandleSummary[] = [];
  views = new Map<string, HandleView>();
  screens = new Map<string, string | null>();
  attach: string[] | null = ['tmux', '-S', '/state/tmux/s', 'attach-session', '-t', '=cal-abc-2'];
  calls: string[] = [];
  certifications = new Map<string, CertificationInfo[]>();

  async list(): Promise<HandleSummary[]> {
    this.calls.push('list');
    return this.summaries;
  }
  async describe(ref: string): Promise<HandleView> {
    this.calls.push(`describe ${ref}`);
    const v = this.views.get(ref);
    if (!v) throw Object.assign(new Error(`no handle ${ref}`), { kind: 'not_found' });
    return v;
  }
  async screen(ref: string): Promise<string | null> {
    return this.screens.get(ref) ?? null;
  }
  async certification(provider: string, version: string): Promise<CertificationInfo[]> {
    return this.certifications.get(`${provider}@${version}`) ?? [];
  }
  async attachCommand(ref: string): Promise<string[] | null> {
    this.calls.push(`attach ${ref}`);
    return this.attach;
  }

  providers = ['claude-code', 'pi'];
  /** The turns the actions started, for the test to drive: report progress, then settle them. */
  turns: ScriptedTurn[] = [];
  /** What cancel, killPane and remove answer (a line, or an error thrown). */
  answers = new Map<string, string | Error>();

  send(ref: string, message: string, watch: TurnWatch): Promise<TurnOutcome> {
    this.calls.push(`send ${ref} ${message}`);
    return this.scripted(watch);
  }
  start(request: NewSessionRequest, watch: TurnWatch): Promise<TurnOutcome> {
    this.calls.push(`start ${request.provider} ${request.cwd} ${request.message}`);
    return this.scripted(watch);
  }
  cancel(ref: string): Promise<string> {
    return this.answer(`cancel ${ref}`);
  }
  killPane(ref: string): Promise<string> {
    return this.answer(`kill ${ref}`);
  }
  remove(ref: string): Promise<string> {
    return this.answer(`remove ${ref}`);
  }

  private async answer(call: string): Promise<string> {
    this.calls.push(call);
    const a = this.answers.get(call.split(' ')[0]!) ?? `${call}: done`;
    if (a instanceof Error) throw a;
    return a;
  }

  private scripted(watch: TurnWatch): Promise<TurnOutcome> {
    return new Promise((resolve, reject) => {
      const turn: ScriptedTurn = { watch, resolve, reject };
      watch.signal.addEventListener('abort', () => reject(Object.assign(new Error('the turn was interrupted'), { kind: 'interrupted' })));
      this.turns.push(turn);
    });
  }
}

export interface ScriptedTurn {
  watch: TurnWatch;
  resolve(outcome: TurnOutcome): void;
  reject(err: unknown): void;
}

/** Resolves once `check` passes on the latest frame (ink renders asynchronously). */
export async function waitForFrame(lastFrame: () => string | undefined, check: (frame: string) => boolean, timeoutMs = 3000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const frame = lastFrame() ?? '';
    if (check(frame)) return frame;
    if (Date.now() > deadline) throw new Error(`frame never matched; last frame:\n${frame}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const tick = (ms = 30) => new Promise((r) => setTimeout(r, ms));

export function certified(patch: Partial<CertificationInfo> = {}): CertificationInfo {
  return { mode: 'scripted', certified: true, pass: 14, fail: 0, skip: 2, failing: [], missing: [], lastRunAt: ago(3 * 3600), ...patch };
}
