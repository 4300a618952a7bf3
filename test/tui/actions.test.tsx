import { cleanup, render } from 'ink-testing-library';
import { afterEach, describe, expect, it } from 'vitest';
import { App } from '../../src/tui/App.js';
import { beforeEnter, editLine } from '../../src/tui/Prompt.js';
import { FakeSource, NOW, summary, tick, turn, view, waitForFrame } from './fixtures.js';

afterEach(() => cleanup());

const ENTER = '\r';
const ESC = '\u001B';
const TAB = '\t';
const ARROW_DOWN = '\u001B[B';
const BACKSPACE = '\u007F';

function source(): FakeSource {
  const s = new FakeSource();
  s.summaries = [summary('aaaaaa1111', { name: 'one' }), summary('abc123def0', { name: 'refactor' })];
  s.views.set('abc123def0', view());
  s.screens.set('abc123def0', 'first screen line');
  return s;
}

/** The app on the list (or a handle's detail), once it has read it and reads keys. */
async function open(src: FakeSource, initial: { mode: 'list' | 'detail'; ref: string | null; selected: number } = { mode: 'list', ref: null, selected: 0 }) {
  const app = render(<App source={src} initial={initial} clock={() => NOW} pollMs={40} defaultCwd="/home/me" />);
  await waitForFrame(app.lastFrame, (f) => (initial.mode === 'list' ? f.includes('› aaaaaa1111') || f.includes('› abc123def0') : f.includes('● alive')));
  await tick();
  return app;
}

/** Types text one key at a time, as a person does. */
async function type(stdin: { write(s: string): void }, text: string) {
  for (const ch of text) {
    stdin.write(ch);
    await tick(5);
  }
}

describe('inspect App: the actions', () => {
  it('s opens a one-line input; Enter sends through the source; progress, then the answer, show in the view', async () => {
    const src = source();
    const { lastFrame, stdin } = await open(src);
    stdin.write('s');
    await waitForFrame(lastFrame, (f) => f.includes('message to aaaaaa1111 (one):') && f.includes('enter sends'));
    await tick();
    await type(stdin, 'Hello there');
    await waitForFrame(lastFrame, (f) => f.includes('message to aaaaaa1111 (one): Hello there'));
    await tick();
    stdin.write(ENTER);
    await waitForFrame(lastFrame, () => src.turns.length === 1);
    expect(src.calls).toContain('send aaaaaa1111 Hello there');
    const t = src.turns[0]!;
    t.watch.onSent({ handle: 'aaaaaa1111', turn: 't0002-xyz' });
    t.watch.onProgress({ phase: 'running', tools: [{ kind: 'shell', name: 'ls', input: { command: 'ls' }, output: null, status: null }], partialAnswer: 'Looking at the files' });
    const running = await waitForFrame(lastFrame, (f) => f.includes('… aaaaaa1111 t0002-xyz running'));
    expect(running).toContain('1 tool · ⚙');
    expect(running).toContain('Looking at the files');
    // While it runs, s says the session is busy instead of opening the input.
    stdin.write('s');
    await waitForFrame(lastFrame, (f) => f.includes('aaaaaa1111 (one) is busy: turn t0002-xyz is in flight (c cancels it)'));
    t.resolve({ handle: 'aaaaaa1111', turn: 't0002-xyz', answer: 'There are two files.\nREADME.md and main.ts' });
    const done = await waitForFrame(lastFrame, (f) => f.includes('✓ answer from aaaaaa1111 t0002-xyz'));
    expect(done).toContain('There are two files.');
    expect(done).toContain('README.md and main.ts');
  });

  it('text and Enter arriving in one read (typed faster than the terminal is read) send the text', async () => {
    const src = source();
    const { lastFrame, stdin } = await open(src);
    stdin.write('s');
    await waitForFrame(lastFrame, (f) => f.includes('message to aaaaaa1111 (one):'));
    await tick();
    stdin.write('All at once\r');
    await waitForFrame(lastFrame, () => src.turns.length === 1);
    expect(src.calls).toContain('send aaaaaa1111 All at once');
    await waitForFrame(lastFrame, (f) => !f.includes('message to'));
  });

  it('keys typed right after s, before its input is drawn, are never taken as commands (c, k, d)', async () => {
    const src = source();
    const { lastFrame, stdin } = await open(src);
    stdin.write('s');
    stdin.write('c');
    stdin.write('k');
    await waitForFrame(lastFrame, (f) => f.includes('message to aaaaaa1111 (one):'));
    await tick(100);
    expect(src.calls.filter((c) => !c.startsWith('list'))).toEqual([]);
  });

  it('s on a session whose last turn is in flight (by the records, from any process) says it is busy', async () => {
    const src = source();
    src.summaries = [summary('aaaaaa1111', {}, turn(5, { status: 'running', answer: null }))];
    const { lastFrame, stdin } = await open(src);
    stdin.write('s');
    await waitForFrame(lastFrame, (f) => f.includes('aaaaaa1111 is busy: turn t0005-abcdef is in flight (c cancels it)'));
    expect(lastFrame()).not.toContain('message to');
  });

  it('a turn sent from here that ended is not busy though the list, read before it ended, says so; the list is read again at its end', async () => {
    const src = source();
    const app = render(<App source={src} initial={{ mode: 'list', ref: null, selected: 0 }} clock={() => NOW} pollMs={60_000} defaultCwd="/home/me" />);
    const { lastFrame, stdin } = app;
    await waitForFrame(lastFrame, (f) => f.includes('› aaaaaa1111'));
    await tick();
    stdin.write('s');
    await waitForFrame(lastFrame, (f) => f.includes('message to aaaaaa1111 (one):'));
    await tick();
    stdin.write('Hello\r');
    await waitForFrame(lastFrame, () => src.turns.length === 1);
    // The records as the list read them while the turn ran; the next read (at the end) is later.
    src.summaries = [summary('aaaaaa1111', { name: 'one' }, turn(2, { id: 't0002-xyz', status: 'running', answer: null }))];
    stdin.write('r');
    await waitForFrame(lastFrame, (f) => /aaaaaa1111 .*running/.test(f));
    const reads = src.calls.filter((c) => c === 'list').length;
    src.turns[0]!.resolve({ handle: 'aaaaaa1111', turn: 't0002-xyz', answer: 'Hi.' });
    await waitForFrame(lastFrame, (f) => f.includes('✓ answer from aaaaaa1111 t0002-xyz'));
    await waitForFrame(lastFrame, () => src.calls.filter((c) => c === 'list').length > reads);
    // That read still has it running (written before the end reached the records): s opens the input.
    await tick();
    stdin.write('s');
    await waitForFrame(lastFrame, (f) => f.includes('message to aaaaaa1111 (one):'));
    expect(lastFrame()).not.toContain('is busy');
  });

  it('Esc closes the input without sending; a failed send shows the error as cal prints it, on one line', async () => {
    const src = source();
    const { lastFrame, stdin } = await open(src, { mode: 'detail', ref: 'abc123def0', selected: 0 });
    stdin.write('s');
    await waitForFrame(lastFrame, (f) => f.includes('message to abc123def0 (refactor):'));
    await tick();
    await type(stdin, 'never');
    stdin.write(ESC);
    await waitForFrame(lastFrame, (f) => !f.includes('message to'));
    expect(src.turns).toHaveLength(0);
    // The keys are the view's again (Esc did not also leave the detail).
    expect(lastFrame()).toContain('handle abc123def0 (refactor)');
    stdin.write('s');
    await waitForFrame(lastFrame, (f) => f.includes('message to abc123def0 (refactor):'));
    await tick();
    await type(stdin, 'go');
    stdin.write(ENTER);
    await waitForFrame(lastFrame, () => src.turns.length === 1);
    src.turns[0]!.reject(Object.assign(new Error('a turn is in flight on abc123def0 (pid 42); pass --wait to wait in line'), { kind: 'busy' }));
    await waitForFrame(lastFrame, (f) => f.includes('✗ abc123def0: cal: busy: a turn is in flight on abc123def0 (pid 42); pass --wait to wait in line'));
  });

  it('c cancels and k kills the pane through the source, each answering with one line; an error is one line too', async () => {
    const src = source();
    src.answers.set('cancel', 'cancelled turn t0004-abcdef: interrupted');
    src.answers.set('kill', Object.assign(new Error('abc123def0 has no pane: it runs structured'), { kind: 'non_applicable' }));
    const { lastFrame, stdin } = await open(src, { mode: 'list', ref: null, selected: 1 });
    await waitForFrame(lastFrame, (f) => f.includes('› abc123def0'));
    stdin.write('c');
    await waitForFrame(lastFrame, (f) => f.includes('cancelled turn t0004-abcdef: interrupted'));
    expect(src.calls).toContain('cancel abc123def0');
    stdin.write('k');
    await waitForFrame(lastFrame, (f) => f.includes('cal: non_applicable: abc123def0 has no pane: it runs structured'));
    expect(src.calls).toContain('kill abc123def0');
  });

  it('d asks y/n: n keeps the session, y removes it through the source', async () => {
    const src = source();
    src.answers.set('remove', 'removed: abc123def0 (refactor)');
    const { lastFrame, stdin } = await open(src, { mode: 'detail', ref: 'abc123def0', selected: 0 });
    stdin.write('d');
    await waitForFrame(lastFrame, (f) => f.includes('remove abc123def0 (refactor)?') && f.includes('(y/n)'));
    await tick();
    stdin.write('x'); // not an answer: the question stays
    await tick();
    expect(lastFrame()).toContain('(y/n)');
    stdin.write('n');
    await waitForFrame(lastFrame, (f) => f.includes('kept abc123def0 (refactor)'));
    expect(src.calls).not.toContain('remove abc123def0');
    stdin.write('d');
    await waitForFrame(lastFrame, (f) => f.includes('(y/n)'));
    await tick();
    stdin.write('y');
    // Removed: back to the list, which no longer has it.
    src.summaries = src.summaries.filter((s) => s.handle.id !== 'abc123def0');
    await waitForFrame(lastFrame, (f) => f.includes('removed: abc123def0 (refactor)') && f.includes('cal inspect · 1 handle'));
    expect(src.calls).toContain('remove abc123def0');
  });

  it('n asks for provider, directory and first message (prefilled from the selection) and starts through the source', async () => {
    const src = source();
    const { lastFrame, stdin } = await open(src);
    stdin.write('n');
    await waitForFrame(lastFrame, (f) => f.includes('new session (cal start)') && f.includes('provider  claude-code'));
    await tick();
    expect(lastFrame()).toContain('directory /work/proj');
    expect(lastFrame()).toContain('providers: claude-code, pi');
    // The provider: cleared with Ctrl-U, typed again.
    stdin.write('\u0015');
    await type(stdin, 'pi');
    stdin.write(TAB);
    await tick();
    for (let i = 0; i < 4; i++) stdin.write(BACKSPACE);
    await type(stdin, 'other');
    stdin.write(ENTER);
    await tick();
    await type(stdin, 'Start here');
    await waitForFrame(lastFrame, (f) => f.includes('message   Start here'));
    stdin.write(ENTER);
    await waitForFrame(lastFrame, () => src.turns.length === 1);
    expect(src.calls).toContain('start pi /work/other Start here');
    await waitForFrame(lastFrame, (f) => f.includes('… new session sending'));
    src.turns[0]!.watch.onSent({ handle: 'newnew0001', turn: 't0001-aaa' });
    src.summaries = [summary('newnew0001', { provider: { ...summary('x').handle.provider, provider: 'pi' } }), ...src.summaries];
    src.turns[0]!.resolve({ handle: 'newnew0001', turn: 't0001-aaa', answer: 'Started.' });
    await waitForFrame(lastFrame, (f) => f.includes('› newnew0001') && f.includes('✓ answer from newnew0001 t0001-aaa') && f.includes('Started.'));
  });

  it('/ filters the list as it is typed; Enter keeps the filter, Esc in the filter clears it', async () => {
    const src = source();
    const { lastFrame, stdin } = await open(src);
    stdin.write('/');
    await waitForFrame(lastFrame, (f) => f.includes('filter:'));
    await tick();
    await type(stdin, 'refac');
    const only = await waitForFrame(lastFrame, (f) => f.includes('cal inspect · 1 of 2 handles matching "refac"'));
    expect(only).toContain('› abc123def0');
    expect(only).not.toContain('aaaaaa1111');
    stdin.write(ENTER);
    await waitForFrame(lastFrame, (f) => !f.includes('filter:'));
    // The actions apply to the filtered selection.
    stdin.write('s');
    await waitForFrame(lastFrame, (f) => f.includes('message to abc123def0 (refactor):'));
    await tick();
    stdin.write(ESC);
    await tick();
    stdin.write('/');
    await waitForFrame(lastFrame, (f) => f.includes('filter: refac'));
    await tick();
    await type(stdin, 'zzz');
    await waitForFrame(lastFrame, (f) => f.includes('No handle matches the filter'));
    stdin.write(ESC);
    await waitForFrame(lastFrame, (f) => f.includes('cal inspect · 2 handles') && f.includes('aaaaaa1111'));
    stdin.write(ARROW_DOWN);
    await waitForFrame(lastFrame, (f) => f.includes('› abc123def0'));
  });

  it('q with a turn sent from here in flight asks again; the second q cancels it (the library settles it)', async () => {
    const src = source();
    const { lastFrame, stdin, frames } = await open(src);
    stdin.write('s');
    await waitForFrame(lastFrame, (f) => f.includes('message to'));
    await tick();
    await type(stdin, 'long');
    stdin.write(ENTER);
    await waitForFrame(lastFrame, () => src.turns.length === 1);
    stdin.write('q');
    await waitForFrame(lastFrame, (f) => f.includes('1 turn sent from here still running: q again cancels it and quits'));
    stdin.write('q');
    await tick(100);
    expect(src.turns[0]!.watch.signal.aborted).toBe(true);
    const count = frames.length;
    await tick(150);
    expect(frames.length).toBe(count);
  });
});

describe('editLine', () => {
  const none = { backspace: false, delete: false, ctrl: false, meta: false, tab: false };
  it('appends typed and pasted text on one line, deletes a character, and Ctrl-U clears', () => {
    expect(editLine('ab', 'c', none)).toBe('abc');
    expect(editLine('', 'one\ntwo\r\nthree', none)).toBe('one two three');
    expect(editLine('abc', '', { ...none, delete: true })).toBe('ab');
    expect(editLine('é😀', '', { ...none, backspace: true })).toBe('é');
    expect(editLine('abc', 'u', { ...none, ctrl: true })).toBe('');
    expect(editLine('abc', 'x', { ...none, ctrl: true })).toBeNull();
    expect(editLine('abc', '', { ...none, tab: true })).toBeNull();
  });
  it('a chunk of typed text that ends in Enter is the text, then Enter (keys sent faster than the terminal is read)', () => {
    expect(beforeEnter('Hello there\r')).toBe('Hello there');
    expect(beforeEnter('\r')).toBeNull();
    expect(beforeEnter('Hello')).toBeNull();
  });
});
