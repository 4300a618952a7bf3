import { describe, expect, it } from 'vitest';
import { requestIsolation } from '../../src/certify/scenarios/hygiene.js';

/**
 * CertParallelIsolation's reading of the scripted model's requests, without binaries: the CI
 * certification of Pi 0.51.0 (no session keys) runs the content branch only on a healthy CLI, so
 * here each branch is also shown a log in which the two sessions are mixed.
 */
const ids = ['session-one', 'session-two'] as const;
const codes = ['ALPHA-1', 'BRAVO-2'] as const;
const first = 'Certification parallel start SAME-3';
const remember = (code: string) => `Remember the codeword ${code}.`;
const request = (sessionKey: string | null, ...userMessages: string[]) => ({ sessionKey, userMessages });

/** The two sessions' requests, each turn carrying its own history, as a healthy CLI sends them. */
const apart = (key: (i: 0 | 1) => string | null) => [
  request(key(0), first),
  request(key(1), first),
  request(key(0), first, remember(codes[0])),
  request(key(1), first, remember(codes[1])),
  request(key(0), first, remember(codes[0]), 'What was the codeword?'),
  request(key(1), first, remember(codes[1]), 'What was the codeword?'),
];

describe('CertParallelIsolation: the model requests of two sessions', () => {
  it('with session keys: apart when each key carries only its own codeword', () => {
    expect(requestIsolation(apart((i) => ids[i]), ids, codes)).toEqual({ told: 'by their session keys', failures: [] });
  });

  it("with session keys: one session's codeword under the other's key fails", () => {
    const log = [...apart((i) => ids[i]), request(ids[0], first, remember(codes[0]), remember(codes[1]))];
    expect(requestIsolation(log, ids, codes).failures).toEqual(["one session's messages reached the model in the other session"]);
  });

  it('with session keys: a session whose key never reached the model fails', () => {
    const log = apart(() => ids[0]);
    expect(requestIsolation(log, ids, codes).failures[0]).toBe('the model could not tell the two sessions apart by their own session keys');
  });

  it('without session keys (Pi before 0.68.1): apart when no request carries both codewords', () => {
    expect(requestIsolation(apart(() => null), ids, codes)).toEqual({ told: 'by what their requests carry (the CLI names no session in them)', failures: [] });
  });

  it("without session keys: a request holding both sessions' codewords fails", () => {
    const log = [...apart(() => null), request(null, first, remember(codes[1]), remember(codes[0]), 'What was the codeword?')];
    expect(requestIsolation(log, ids, codes).failures).toEqual(["one request carried both sessions' messages: one session's history reached the other"]);
  });

  it("without session keys: a session whose messages never reached the model fails", () => {
    const log = apart(() => null).filter((r) => !r.userMessages.some((m) => m.includes(codes[1])));
    expect(requestIsolation(log, ids, codes).failures).toEqual(["the model never saw one of the two sessions' messages"]);
  });

  it('keys of other sessions only (a side request, another client) are read by content', () => {
    const log = apart(() => 'someone-else');
    expect(requestIsolation(log, ids, codes).told).toBe('by what their requests carry (the CLI names no session in them)');
  });
});
