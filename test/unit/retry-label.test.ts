import { describe, expect, it } from 'vitest';
import { retryLabel } from '../../src/commands/progress.js';

describe('the spinner line for a retrying model request', () => {
  it('says the attempt, of how many, the HTTP status and the wait, with what the CLI gave', () => {
    expect(retryLabel({ attempt: 2, maxRetries: 10, errorStatus: 500, delayMs: 1227 })).toBe('attempt 2 of 10, HTTP 500, next in 1.2s');
    expect(retryLabel({ attempt: 1 })).toBe('attempt 1');
    expect(retryLabel({ attempt: 3, maxRetries: null, errorStatus: null, delayMs: 500 })).toBe('attempt 3, next in 0.5s');
  });
});
