import type { AgentSessionHandle } from '../../handles/schema.js';
import type { ModelRequestLogEntry } from '../../model/server.js';
import type { EventRecord } from '../../state/store.js';
import type { TurnRecord } from '../../state/turns.js';
import type { ScenarioContext } from '../context.js';

/** Messages the scripted model answers deterministically (and a real model understands). */
export const remember = (code: string): string => `Remember the codeword ${code}.`;
export const RECALL = 'What was the codeword?';

export function secs(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

export function q(text: string | null | undefined, max = 60): string {
  if (text === null || text === undefined) return 'null';
  const one = JSON.stringify(text);
  return one.length > max ? `${one.slice(0, max - 1)}…"` : one;
}

/** The first turn's answer: exact with the scripted model, merely present with a real one. */
export function expectRemembered(ctx: ScenarioContext, turn: TurnRecord, code: string): void {
  if (ctx.scripted) {
    const expected = `OK, I will remember the codeword ${code}.`;
    ctx.check(turn.answer === expected, `first answer was ${q(turn.answer)}, expected ${q(expected)}`);
  } else {
    ctx.check(turn.answer !== null && turn.answer.trim() !== '', 'the first turn completed with an empty answer');
  }
}

/** A recall answer proves the CLI sent the earlier turn again (the model keeps no memory). */
export function expectRecalled(ctx: ScenarioContext, turn: TurnRecord, code: string): void {
  if (ctx.scripted) {
    const expected = `The codeword was ${code}.`;
    ctx.check(turn.answer === expected, `recall answer was ${q(turn.answer)}, expected ${q(expected)}: the history did not reach the model`);
  } else {
    ctx.check((turn.answer ?? '').toUpperCase().includes(code.toUpperCase()), `recall answer ${q(turn.answer)} does not name the codeword ${code}: the history did not reach the model`);
  }
}

/**
 * The conversation requests of one session. The scripted model logs the CLI's own session key
 * (Claude's session id, Codex's thread id); a CLI that sends none gets every request of the
 * scenario (scenarios with one session only rely on that).
 */
export function sessionRequests(ctx: ScenarioContext, handle: AgentSessionHandle, mark = 0): ModelRequestLogEntry[] {
  return requestsOfSession(ctx.model.since(mark), handle.provider.nativeSessionId);
}

/** Of `requests`, those carrying session key `id`; all of them when none carries it (a CLI that names no session). */
export function requestsOfSession<R extends Pick<ModelRequestLogEntry, 'sessionKey'>>(requests: readonly R[], id: string | null): R[] {
  return id && requests.some((r) => r.sessionKey === id) ? requests.filter((r) => r.sessionKey === id) : [...requests];
}

/** The requests of a turn: those whose last user message is (contains) the turn's message. */
export function turnRequests(ctx: ScenarioContext, text: string, mark = 0): ModelRequestLogEntry[] {
  return ctx.model.carrying(text, mark);
}

export function eventNames(events: EventRecord[]): string[] {
  return events.map((e) => e.event);
}

/** How long a shell probe keeps its shell open after its command, in seconds. */
export const SHELL_PROBE_WAIT_S = 1;

/**
 * The command a scenario has the scripted model run (`[[cal:shell=…]]`) when it checks the
 * command's output: the command, then a second with the shell still open. Gemini 0.61.0 runs its
 * shell tool in a pty and can lose the output of a command that exits at once when its own process
 * is busy: it then sends the model `Output: (empty)` itself (2 CI runs in 7, docs/gemini.md;
 * fixtures/gemini-0.61.0-tui-lost-shell-output.session.jsonl). Output written a second before the
 * exit is read while the command still runs. A failing command still fails (`&&`).
 */
export function shellProbe(command: string): string {
  return `${command} && sleep ${SHELL_PROBE_WAIT_S}`;
}

/**
 * The slow tool of CertSlowToolNoFalseIdle: a shell probe that sleeps `seconds`, then prints
 * `nonce` (its first line of output, which the scripted model's answer quotes). It must not
 * start with `sleep`: Qwen Code 0.24.4 refuses a foreground command that starts with
 * `sleep N` (N >= 2) followed by anything, as its tool result (`Blocked: sleep 8 followed by:
 * …`), so the tool would never run and the model would answer at once (docs/qwen.md).
 */
export function slowShellProbe(seconds: number, nonce: string): string {
  return shellProbe(`true && sleep ${seconds} && echo ${nonce}`);
}

/** Non-empty, trimmed lines of a tool's output. */
export function outputLines(output: string | undefined): string[] {
  return (output ?? '').split('\n').map((l) => l.trim()).filter(Boolean);
}

export function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** Where two texts first differ, for a failure message. */
export function firstDifference(actual: string, expected: string): string {
  let i = 0;
  while (i < actual.length && i < expected.length && actual[i] === expected[i]) i++;
  return `they differ at character ${i} of ${expected.length} (got ${q(actual.slice(i, i + 20))}, expected ${q(expected.slice(i, i + 20))}; got ${actual.length} characters)`;
}
