import { EventEmitter } from 'node:events';
import { render, type Instance } from 'ink';
import { cleanup, render as renderForTest } from 'ink-testing-library';
import { afterEach, describe, expect, it } from 'vitest';
import { App } from '../../src/tui/App.js';
import { KeyReader, splitKeys, type KeySplitState } from '../../src/tui/key-reader.js';
import { FakeSource, NOW, summary, tick, waitForFrame } from './fixtures.js';

const split = (...reads: string[]) => {
  const state: KeySplitState = { paste: null };
  return reads.flatMap((r) => splitKeys(r, state));
};

describe('splitKeys: a read as the keys in it', () => {
  it('control keys are their own units; printable runs stay whole', () => {
    expect(split('\rd')).toEqual(['\r', 'd']);
    expect(split('All at once\r')).toEqual(['All at once', '\r']);
    expect(split('\u007F\u007Fab\tc')).toEqual(['\u007F', '\u007F', 'ab', '\t', 'c']);
    expect(split('\u0003')).toEqual(['\u0003']);
  });

  it('escape sequences stay whole: arrows, Alt and an arrow, a lone Esc, SS3, a wide character after Alt', () => {
    expect(split('\u001B[B\u001B[Ax')).toEqual(['\u001B[B', '\u001B[A', 'x']);
    expect(split('\u001B\u001B[A')).toEqual(['\u001B\u001B[A']);
    expect(split('\u001B')).toEqual(['\u001B']);
    expect(split('\u001BOPq')).toEqual(['\u001BOP', 'q']);
    expect(split('\u001B[1;5Cd')).toEqual(['\u001B[1;5C', 'd']);
    expect(split('\u001B😀')).toEqual(['\u001B😀']);
  });

  it('a bracketed paste is one unit, over reads too, its line breaks spaces: never Enter, never keys', () => {
    expect(split('\u001B[200~one\r\ntwo\rk\u001B[201~\r')).toEqual(['one two k', '\r']);
    expect(split('\u001B[200~line one\r', 'line two\u001B[201~', 'd')).toEqual(['line one line two', 'd']);
    expect(split('\u001B[200~\u001B[201~')).toEqual([]);
  });
});

/** A terminal's stdin as Ink and the reader use it: raw mode, utf8, 'data'. */
class FakeTty extends EventEmitter {
  readonly isTTY = true;
  raw = false;
  setRawMode(mode: boolean) {
    this.raw = mode;
  }
  setEncoding() {}
  resume() {}
  pause() {}
  ref() {}
  unref() {}
}

class FakeStdout extends EventEmitter {
  readonly columns = 120;
  readonly rows = 40;
  frame = '';
  write = (frame: string) => {
    this.frame = frame;
    return true;
  };
}

let mounted: Instance | null = null;
afterEach(() => {
  mounted?.unmount();
  mounted = null;
});

/** The App on a fake terminal, its keys through a KeyReader. */
function mount(src: FakeSource) {
  const tty = new FakeTty();
  const stdout = new FakeStdout();
  mounted = render(<App source={src} initial={{ mode: 'list', ref: null, selected: 0 }} clock={() => NOW} pollMs={40} defaultCwd="/home/me" />, {
    stdin: new KeyReader(tty) as unknown as NodeJS.ReadStream,
    stdout: stdout as unknown as NodeJS.WriteStream,
    debug: true,
    exitOnCtrlC: false,
    patchConsole: false,
  });
  return { tty, frame: () => stdout.frame };
}

describe('keys under the inspect App: one at a time, to what is open', () => {
  it('Enter and d in one read: Enter closes the filter, then d asks to remove (the filter is not given the d)', async () => {
    const src = new FakeSource();
    src.summaries = [summary('aaaaaa1111', { name: 'one' }), summary('abc123def0', { name: 'refactor' })];
    const { tty, frame } = mount(src);
    await waitForFrame(frame, (f) => f.includes('› aaaaaa1111'));
    expect(tty.raw).toBe(true);
    tty.emit('data', '/');
    await waitForFrame(frame, (f) => f.includes('filter:'));
    await tick();
    tty.emit('data', 'refactor');
    await waitForFrame(frame, (f) => f.includes('1 of 2 handles matching "refactor"'));
    await tick();
    tty.emit('data', '\rd');
    const asked = await waitForFrame(frame, (f) => f.includes('remove abc123def0 (refactor)?') && f.includes('(y/n)'));
    expect(asked).not.toContain('filter:');
    tty.emit('data', 'n');
    await waitForFrame(frame, (f) => f.includes('kept abc123def0 (refactor)'));
    expect(src.calls.filter((c) => c.startsWith('remove'))).toEqual([]);
  });

  it('a key read before the question it answers is drawn answers it (d, then y at once)', async () => {
    const src = new FakeSource();
    src.summaries = [summary('aaaaaa1111', { name: 'one' })];
    // ink-testing-library's stdin: each write straight to Ink, no reader pacing them.
    const { lastFrame, stdin } = renderForTest(<App source={src} initial={{ mode: 'list', ref: null, selected: 0 }} clock={() => NOW} pollMs={40} defaultCwd="/home/me" />);
    await waitForFrame(lastFrame, (f) => f.includes('› aaaaaa1111'));
    await tick();
    stdin.write('d');
    stdin.write('y');
    await waitForFrame(lastFrame, () => src.calls.includes('remove aaaaaa1111'));
    cleanup();
  });

  it('a paste into the message input is the message, not Enter and commands', async () => {
    const src = new FakeSource();
    src.summaries = [summary('aaaaaa1111', { name: 'one' })];
    const { tty, frame } = mount(src);
    await waitForFrame(frame, (f) => f.includes('› aaaaaa1111'));
    tty.emit('data', 's');
    await waitForFrame(frame, (f) => f.includes('message to aaaaaa1111 (one):'));
    await tick();
    tty.emit('data', '\u001B[200~first line\rk\rd\r\u001B[201~');
    await waitForFrame(frame, (f) => f.includes('message to aaaaaa1111 (one): first line k d'));
    await tick(100);
    expect(src.calls.filter((c) => !/^(list|describe)/.test(c))).toEqual([]);
    tty.emit('data', '\r');
    await waitForFrame(frame, () => src.turns.length === 1);
    expect(src.calls).toContain('send aaaaaa1111 first line k d ');
  });
});
