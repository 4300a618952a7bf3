import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleFromStderr } from '../support/cal.js';
import { cliSuite, type CliSuite, type SuiteProvider } from '../support/cli-suite.js';

/**
 * Issue 41: a draft a person left in a live pane's input box (typed, never submitted) is cleared
 * by the adapter's own keys before cal pastes, so the CLI sends cal's message alone. The drafts
 * are typed with `tmux send-keys -l`, as a person attached to the pane would type them.
 */
const SHORT_DRAFT = 'my half typed draft';
const LONG_DRAFT = Array.from({ length: 20 }, (_, i) => `draftword${i % 10}`).join('');

const providers: SuiteProvider[] = ['claude-code', 'codex', 'pi', 'gemini'];

describe.each(providers)('a draft left in the %s pane', (provider) => {
  let s: CliSuite;
  let handle: string;

  beforeAll(async () => {
    s = await cliSuite(provider, { prefix: `drafts-${provider}` });
    const run = await s.cal(['start', '--provider', provider, '--cwd', s.work, '--timeout', '120', 'Remember the codeword LOTUS.']);
    expect(run.code, run.stderr).toBe(0);
    handle = handleFromStderr(run.stderr) as string;
  }, 180_000);
  afterAll(async () => s?.close());

  it.each([
    ['a few words', SHORT_DRAFT],
    ['a 200-character line', LONG_DRAFT],
  ])('%s typed into the pane never reaches the model, and the answer is to cal message alone', async (_what, draft) => {
    expect(LONG_DRAFT).toHaveLength(200);
    const view = await s.inspect(handle);
    const { socket, paneId } = view.provider.tmux as { socket: string; paneId: string };
    await execa('tmux', ['-S', socket, 'send-keys', '-t', paneId, '-l', draft]);
    // Let the TUI draw the draft, as it stands when a person detaches.
    await new Promise((r) => setTimeout(r, 1500));
    const before = s.server.turnRequests().length;
    const next = await s.cal(['continue', handle, '--timeout', '120', 'What was the codeword?']);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stdout.trim()).toBe('The codeword was LOTUS.');
    const sent = s.server.turnRequests().slice(before);
    expect(sent.length).toBeGreaterThan(0);
    for (const request of sent) expect(request.userMessages.join('\n')).not.toContain(draft.slice(0, 12));
    expect(sent.at(-1)!.userMessages.at(-1)).toBe('What was the codeword?');
  }, 180_000);
});
