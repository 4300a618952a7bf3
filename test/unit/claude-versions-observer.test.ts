import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ANSWER_FLUSH_MS, ClaudeTurnObserver, STOP_GRACE_MS, STOP_SUMMARY_WAIT_MS } from '../../src/adapters/claude-code/transcript.js';
import type { TurnObservation } from '../../src/adapters/types.js';
import { repoRoot } from '../support/clis.js';

/**
 * The Claude Code observer over transcripts and Stop-hook signal files recorded from real
 * releases across the version matrix (2.0.12 … 2.1.332, fixtures/claude-code-<version>-*).
 * Each replay plays the two files in the order of their own clocks (record `timestamp`, the
 * hook's `cal_received_at`), with the test's clock set to each event's time.
 */
type Event = { at: number; kind: 'record' | 'signal'; value: unknown };

function load(name: string, suffix = '.jsonl'): unknown[] {
  return readFileSync(path.join(repoRoot, 'fixtures', `claude-code-${name}${suffix}`), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

function timeline(name: string): Event[] {
  const events: Event[] = [];
  const records = load(name);
  // Records before the first timed one take its time.
  let last = records.map((r) => Date.parse((r as { timestamp?: string }).timestamp ?? '')).find((t) => !Number.isNaN(t)) ?? 0;
  for (const value of records) {
    const ts = Date.parse((value as { timestamp?: string }).timestamp ?? '');
    if (!Number.isNaN(ts)) last = ts;
    events.push({ at: last, kind: 'record', value });
  }
  for (const value of load(name, '.signals.jsonl')) {
    events.push({ at: Date.parse((value as { cal_received_at: string }).cal_received_at), kind: 'signal', value });
  }
  // Stable: records without a time keep their place after the one before them.
  return events.map((e, i) => ({ e, i })).sort((a, b) => a.e.at - b.e.at || a.i - b.i).map(({ e }) => e);
}

interface Replay {
  observation: TurnObservation;
  /** When the observation first read as ended (test clock), or null. */
  endedAt: number | null;
  /** The time of the last assistant record written before the turn ended. */
  lastAssistantAt: number | null;
}

/** Plays a recording into an observer for `message`, then lets the clock run `tail` ms more. */
function replay(events: Event[], message: string, tail = 10_000): Replay {
  const o = new ClaudeTurnObserver(message);
  let endedAt: number | null = null;
  let lastAssistantAt: number | null = null;
  let now = events[0]?.at ?? 0;
  for (const ev of events) {
    // The engine reads the observation on every poll, also when nothing new was written.
    for (let t = now + 50; endedAt === null && t < ev.at; t += 50) {
      vi.setSystemTime(t);
      if (o.observation.phase === 'ended') endedAt = t;
    }
    now = Math.max(now, ev.at);
    vi.setSystemTime(now);
    if (ev.kind === 'record') o.feed(ev.value);
    else o.feedSignal(ev.value);
    if (endedAt === null && o.observation.phase === 'ended') endedAt = now;
    if (endedAt === null && ev.kind === 'record' && (ev.value as { type?: string }).type === 'assistant' && o.observation.phase === 'running') lastAssistantAt = ev.at;
  }
  for (let t = now; endedAt === null && t <= now + tail; t += 50) {
    vi.setSystemTime(t);
    if (o.observation.phase === 'ended') endedAt = t;
  }
  return { observation: o.observation, endedAt, lastAssistantAt };
}

function only(events: Event[], kind: Event['kind']): Event[] {
  return events.filter((e) => e.kind === kind);
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const loops = [
  '2.0.12-interactive-loop-resume',
  '2.0.22-interactive-loop-resume-sidechain-warmup',
  '2.0.50-interactive-loop-resume',
  '2.0.76-interactive-loop-resume',
  '2.1.29-interactive-loop-resume',
  // The first release with cal's shell Stop hook: its signal lines are timed to the second.
  '2.1.196-interactive-loop-resume',
  '2.1.332-interactive-loop-resume',
];

describe.each(loops)('Claude Code %s: remember, paste, kill, resume, recall', (name) => {
  const turns = [
    { message: 'Remember the codeword KIWI.', answer: 'OK, I will remember the codeword KIWI.' },
    { message: 'What was the codeword?', answer: 'The codeword was KIWI.' },
    { message: 'What was the codeword, again?', answer: 'The codeword was KIWI.' },
  ];

  it.each(turns)('"$message" completes with its own answer, within a second of the final assistant record', ({ message, answer }) => {
    const r = replay(timeline(name), message);
    expect(r.observation).toMatchObject({ phase: 'ended', status: 'completed', answer });
    expect(r.endedAt! - r.lastAssistantAt!).toBeLessThan(1000);
    // The turn's key comes from the CLI's own user record: its promptId, else its uuid.
    const user = load(name).find((v) => {
      const rec = v as { type?: string; isMeta?: boolean; message?: { content?: unknown } };
      return rec.type === 'user' && !rec.isMeta && rec.message?.content === message;
    }) as { promptId?: string; uuid: string };
    expect(r.observation.phase === 'ended' && r.observation.turnKey).toBe(user.promptId ?? user.uuid);
  });

  it('without the signal file each turn still ends, or is closed by the next prompt: never another turn\'s answer', () => {
    for (const { message, answer } of turns) {
      const r = replay(only(timeline(name), 'record'), message, 0);
      if (r.observation.phase === 'ended' && r.observation.status === 'completed') expect(r.observation.answer).toBe(answer);
      else if (message !== turns[2]!.message) expect(r.observation).toMatchObject({ phase: 'ended', status: 'lost' });
    }
  });

  it('reads the same whichever file is read first', () => {
    for (const { message, answer } of turns) {
      const all = timeline(name);
      const signalsFirst = [...only(all, 'signal').map((e) => ({ ...e, at: all[0]!.at })), ...only(all, 'record')];
      expect(replay(signalsFirst, message).observation, message).toMatchObject({ phase: 'ended', status: 'completed', answer });
    }
  });
});

describe('Claude Code releases without stop_hook_summary or turn_duration end on the Stop signal', () => {
  it('2.0.12: the transcript alone never says the turn ended; the signal ends it after the grace', () => {
    const events = until(timeline('2.0.12-interactive-loop-resume'), 'What was the codeword, again?');
    const alone = replay(only(events, 'record'), 'What was the codeword?');
    expect(alone.observation.phase).toBe('running');
    const r = replay(events, 'What was the codeword?');
    expect(r.observation).toMatchObject({ phase: 'ended', status: 'completed', answer: 'The codeword was KIWI.' });
    const stop = only(events, 'signal').filter((e) => (e.value as { hook_event_name: string }).hook_event_name === 'Stop').at(-1)!;
    expect(r.endedAt! - stop.at).toBeGreaterThanOrEqual(STOP_GRACE_MS);
    expect(r.endedAt! - stop.at).toBeLessThan(STOP_GRACE_MS + 100);
  });

  it('2.0.12: read later in one go (cal recover), the turn has ended at once', () => {
    const events = until(timeline('2.0.12-interactive-loop-resume'), 'What was the codeword, again?');
    const o = new ClaudeTurnObserver('What was the codeword?');
    vi.setSystemTime(events.at(-1)!.at + 10_000);
    for (const e of events) (e.kind === 'record' ? o.feed(e.value) : o.feedSignal(e.value));
    expect(o.observation).toMatchObject({ phase: 'ended', status: 'completed', answer: 'The codeword was KIWI.' });
  });

  it('2.0.22: a subagent warmup written into the session file is never taken for the prompt or the answer', () => {
    const r = replay(timeline('2.0.22-interactive-loop-resume-sidechain-warmup'), 'Remember the codeword KIWI.');
    expect(r.observation).toMatchObject({ status: 'completed', answer: 'OK, I will remember the codeword KIWI.' });
    expect(replay(timeline('2.0.22-interactive-loop-resume-sidechain-warmup'), 'Warmup').observation.phase).toBe('waiting');
  });
});

describe('user records without promptId (2.1.29) still bind the right turn', () => {
  it('the first turn, followed without an end marker, is closed as lost by the next prompt, never given its answer', () => {
    const records = only(timeline('2.1.29-interactive-loop-resume'), 'record').filter((e) => {
      const sub = (e.value as { subtype?: string }).subtype;
      return sub !== 'stop_hook_summary' && sub !== 'turn_duration';
    });
    const r = replay(records, 'Remember the codeword KIWI.', 0);
    expect(r.observation).toMatchObject({ phase: 'ended', status: 'lost', answer: null });
  });

  it('a Stop signal from an earlier turn is not this turn\'s end', () => {
    const events = timeline('2.1.29-interactive-loop-resume');
    const firstStop = only(events, 'signal').find((e) => (e.value as { hook_event_name: string }).hook_event_name === 'Stop')!;
    const second = events.filter((e) => e.kind === 'record' && JSON.stringify(e.value).includes('What was the codeword?'));
    const o = new ClaudeTurnObserver('What was the codeword?');
    vi.setSystemTime(second[0]!.at + 5000);
    o.feed(second[0]!.value);
    o.feedSignal(firstStop.value);
    vi.setSystemTime(second[0]!.at + 60_000);
    expect(o.observation.phase).toBe('running');
  });
});

/** The events before the first record that carries `text` (what cal would never send before the turn ended). */
function until(events: Event[], text: string): Event[] {
  const cut = events.findIndex((e) => e.kind === 'record' && JSON.stringify(e.value).includes(JSON.stringify(text)));
  return cut < 0 ? events : events.slice(0, cut);
}

/** Moves the Stop signal of the turn of `message` to just before its final assistant record, and delays the transcript from there by `delay` ms. */
function stopBeforeAnswer(events: Event[], message: string, delay: number): { events: Event[]; answerAt: number } {
  const user = events.findIndex((e) => e.kind === 'record' && JSON.stringify(e.value).includes(JSON.stringify(message)));
  const answer = events.findIndex((e, i) => i > user && e.kind === 'record' && (e.value as { type?: string }).type === 'assistant');
  const stop = events.findIndex((e, i) => i > user && e.kind === 'signal' && (e.value as { hook_event_name: string }).hook_event_name === 'Stop');
  const answerAt = events[answer]!.at;
  const out = events
    .filter((_, i) => i !== stop)
    .map((e, i) => (i >= answer && e.kind === 'record' ? { ...e, at: e.at + delay } : e));
  out.push({ ...events[stop]!, at: answerAt - 1 });
  return { events: out.sort((a, b) => a.at - b.at), answerAt: answerAt + delay };
}

describe('an answer the transcript is late to record, or never records', () => {
  it('2.1.29 with prompt suggestions lost the second answer: the turn fails after the flush bound, never an empty success', () => {
    const events = until(timeline('2.1.29-interactive-prompt-suggestion-lost-answer'), 'What was the codeword, again?');
    const r = replay(events, 'What was the codeword?');
    expect(r.observation).toMatchObject({ phase: 'ended', status: 'failed', answer: null });
    expect(r.observation.phase === 'ended' && r.observation.error).toMatch(/no final answer/);
    const summary = events.filter((e) => (e.value as { subtype?: string }).subtype === 'stop_hook_summary').at(-1)!;
    expect(r.endedAt! - summary.at).toBeGreaterThanOrEqual(ANSWER_FLUSH_MS);
    expect(r.endedAt! - summary.at).toBeLessThan(ANSWER_FLUSH_MS + 100);
  });

  it.each(['2.0.22-interactive-loop-resume-sidechain-warmup', '2.1.332-interactive-loop-resume'])(
    '%s: a Stop signal read before the final assistant record waits for it',
    (name) => {
      const message = 'What was the codeword?';
      const { events, answerAt } = stopBeforeAnswer(until(timeline(name), 'What was the codeword, again?'), message, 2000);
      const r = replay(events, message);
      expect(r.observation).toMatchObject({ status: 'completed', answer: 'The codeword was KIWI.' });
      expect(r.endedAt!).toBeGreaterThanOrEqual(answerAt);
      expect(r.endedAt! - answerAt).toBeLessThan(1000);
    },
  );

  it("2.1.332: with the transcript's end never written, the Stop signal still ends the turn, on the hook's copy of the answer", () => {
    const message = 'What was the codeword?';
    const all = until(timeline('2.1.332-interactive-loop-resume'), 'What was the codeword, again?');
    const user = all.findIndex((e) => e.kind === 'record' && JSON.stringify(e.value).includes(JSON.stringify(message)));
    // Nothing of the turn after the user record reaches the transcript.
    const events = all.filter((e, i) => i <= user || e.kind === 'signal');
    const stop = events.filter((e) => e.kind === 'signal' && (e.value as { hook_event_name: string }).hook_event_name === 'Stop').at(-1)!;
    const r = replay(events, message, STOP_SUMMARY_WAIT_MS + 1000);
    expect(r.observation).toMatchObject({ phase: 'ended', status: 'completed', answer: 'The codeword was KIWI.' });
    expect(r.endedAt! - stop.at).toBeLessThan(STOP_SUMMARY_WAIT_MS + 100);
  });
});

describe("a user's own Stop hook that makes Claude go on", () => {
  it.each(['2.0.76', '2.1.332'])('%s: the turn ends after the continuation, with its answer', (version) => {
    const events = timeline(`${version}-interactive-user-stop-hook-blocks-once`);
    const r = replay(events, 'Remember the codeword KIWI.');
    const assistants = events.filter((e) => e.kind === 'record' && (e.value as { type?: string }).type === 'assistant');
    expect(assistants.length).toBe(2);
    expect(r.observation).toMatchObject({ phase: 'ended', status: 'completed' });
    expect(r.endedAt!).toBeGreaterThanOrEqual(assistants[1]!.at);
    const text = (assistants[1]!.value as { message: { content: { text: string }[] } }).message.content[0]!.text;
    expect(r.observation.phase === 'ended' && r.observation.answer).toBe(text);
  });
});

describe('a prompt blocked or stopped by a UserPromptSubmit hook settles as failed with the hook\'s text', () => {
  it.each([
    ['2.0.76-interactive-prompt-hook-blocked', 'a UserPromptSubmit hook blocked the prompt: blocked by policy: no BLOCKME'],
    ['2.1.332-interactive-prompt-hook-blocked-prompt-kept', 'a UserPromptSubmit hook blocked the prompt: blocked by policy: no BLOCKME'],
    ['2.0.76-interactive-prompt-hook-stopped', 'a UserPromptSubmit hook stopped the prompt: stopped by policy: no BLOCKME'],
    ['2.1.332-interactive-prompt-hook-stopped', 'a UserPromptSubmit hook stopped the prompt: stopped by policy: no BLOCKME'],
  ])('%s', (name, error) => {
    const r = replay(timeline(name), 'BLOCKME first', 0);
    expect(r.observation).toMatchObject({ phase: 'ended', status: 'failed', answer: null, error });
  });

  it('a PreToolUse hook that stops the turn after its tool (no reply, then turn_duration) fails it with the hook\'s reason, as claude -p does (2.1.328)', () => {
    const events = timeline('2.1.328-interactive-pretooluse-hook-stopped');
    const r = replay(events, 'Write it [[cal:mcp=x.Write {"file_path":"/work/wt/h44g/.tmp/crec/w/ok.txt","content":"hi"}]]');
    expect(r.observation).toMatchObject({ phase: 'ended', status: 'failed', answer: null, error: 'the PreToolUse:Write hook stopped the turn: write refused by hook' });
    // The turn before it, with no hook stop, completes as ever.
    expect(replay(events, 'Remember the codeword FIG.').observation).toMatchObject({ status: 'completed', answer: 'OK, I will remember the codeword FIG.' });
  });

  it('the prompts after a blocked one still complete with their answers (2.0.76)', () => {
    const r = replay(timeline('2.0.76-interactive-prompt-hook-blocked'), 'What was the codeword?');
    expect(r.observation).toMatchObject({ status: 'completed', answer: 'The codeword was KIWI.' });
  });
});
