import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSessions } from '../../src/index.js';
import { handleFromStderr } from '../support/cal.js';
import { cliSuite, type CliSuite, type SuiteProvider } from '../support/cli-suite.js';

/**
 * Issue 40, item 3, with the real pinned CLIs in real tmux: a message the CLI transforms on its
 * way into its transcript is still the turn's message. Claude Code turns a pasted quoted path to
 * an existing image into an image attachment (its record no longer holds the text cal pasted);
 * a lone UTF-16 surrogate reaches the CLI as U+FFFD. Before, cal matched only the exact text and
 * reported both as never taken (`turn_failed`, exit 10: "resend") after the model had answered.
 */

/** A 1x1 transparent PNG: a real image file, as a drag and drop into a terminal names one. */
const PNG_1X1 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

const providers: SuiteProvider[] = ['claude-code', 'codex', 'gemini', 'pi'];

describe.each(providers)('messages the CLI transforms, with the real %s', (provider) => {
  let suite: CliSuite;
  let handle: string;

  beforeAll(async () => {
    suite = await cliSuite(provider, { prefix: `transformed-${provider}` });
    const run = await suite.cal(['start', '--provider', provider, 'Remember the codeword TANGO.']);
    expect(run.code, run.stderr).toBe(0);
    handle = handleFromStderr(run.stderr) ?? '';
  }, 180_000);

  afterAll(async () => {
    await suite?.close();
  });

  it('a quoted path to a real PNG (a drag and drop) is taken and answered: exit 0, never "not taken"', async () => {
    const shot = path.join(suite.root, 'shot.png');
    await fs.writeFile(shot, PNG_1X1);
    const run = await suite.cal(['continue', handle, `'${shot}'`, '--timeout', '120']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^Received: /);
    // What reached the model (measured, docs/security.md): Claude Code and Codex attach the image
    // (the text cal pasted is gone from the prompt), Gemini puts the file in, Pi sends the text.
    const got = suite.server.turnRequests().at(-1)?.lastUserMessage ?? '';
    if (provider === 'claude-code') expect(got).toBe(`[Image: source: ${shot}]`);
    if (provider === 'codex') expect(got).toBe('[Image #1]');
    if (provider === 'gemini') expect(got).toContain('--- End of content ---');
    if (provider === 'pi') expect(got).toBe(`'${shot}'`);

    // Only a path to a file that exists is attached: a missing image is sent as the text it is.
    const missing = path.join(suite.root, 'missing.png');
    const gone = await suite.cal(['continue', handle, `'${missing}'`, '--timeout', '120']);
    expect(gone.code, gone.stderr).toBe(0);
    expect(suite.server.turnRequests().at(-1)?.lastUserMessage).toBe(`'${missing}'`);
    // A text file: attached by Gemini only.
    const notes = path.join(suite.root, 'notes.txt');
    await fs.writeFile(notes, 'plain notes\n');
    const text = await suite.cal(['continue', handle, `'${notes}'`, '--timeout', '120']);
    expect(text.code, text.stderr).toBe(0);
    const gotText = suite.server.turnRequests().at(-1)?.lastUserMessage ?? '';
    if (provider === 'gemini') expect(gotText).toContain('--- End of content ---');
    else expect(gotText).toBe(`'${notes}'`);

    const after = await suite.cal(['continue', handle, 'What was the codeword?', '--timeout', '120']);
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout.trim()).toBe('The codeword was TANGO.');
  }, 300_000);

  it('a lone surrogate from the library is sent as U+FFFD, recorded so, and answered', async () => {
    const sessions = await openSessions({ stateDir: suite.state, env: suite.env });
    const result = await sessions.continue(handle, 'lone \uD800 surrogate hi', { timeoutSeconds: 120 });
    expect(result.turn.status).toBe('completed');
    expect(result.turn.message).toBe('lone \uFFFD surrogate hi');
    expect(result.turn.answer).toBe('Received: lone \uFFFD surrogate hi');
  }, 300_000);
});
