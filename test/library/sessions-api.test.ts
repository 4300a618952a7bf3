import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CalError, TurnError, eventKinds, exitCodes, openSessions, type CalEvent, type ChatMessage, type Sessions } from '../../src/index.js';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { scratchDir } from '../support/cal.js';
import { removeScratch } from '../support/scratch.js';

/**
 * The library on an API session (provider `anthropic` against the scripted model): no CLI
 * binary and no tmux, so every routing rule of ask() that does not need a coding-agent CLI is
 * checked here in a few seconds. The native-session proof is packed-install.test.ts.
 */
let server: ModelServer;
let root: string;
let sessions: Sessions;

beforeAll(async () => {
  server = await startModelServer({});
  root = await scratchDir('library-api');
  sessions = await openSessions({
    stateDir: path.join(root, 'state'),
    env: { PATH: process.env.PATH, ANTHROPIC_BASE_URL: server.url, ANTHROPIC_AUTH_TOKEN: 'test-token' },
  });
});

afterAll(async () => {
  await server.close();
  await removeScratch(root);
});

const userMessages = () => server.turnRequests().at(-1)?.userMessages;

describe('openSessions on an API provider', () => {
  it('start, continue and ask: the managed history goes to the API, and only the new message is added to it', async () => {
    const first = await sessions.start({ provider: 'anthropic', message: 'Remember the codeword LIMA.' });
    expect(first.turn.status).toBe('completed');
    const second = await sessions.continue(first.handle, 'What was the codeword?');
    expect(second.turn.answer).toBe('The codeword was LIMA.');

    const history: ChatMessage[] = [
      { role: 'user', content: 'Remember the codeword LIMA.' },
      { role: 'assistant', content: first.turn.answer ?? '' },
      { role: 'user', content: 'What was the codeword?' },
      { role: 'assistant', content: ` ${second.turn.answer}\n` }, // surrounding whitespace is no difference
      { role: 'user', content: 'What was the codeword, again?' },
    ];
    const before = server.turnRequests().length;
    const third = await sessions.ask({ handle: first.handle.id, messages: history });
    expect(third.turn.answer).toBe('The codeword was LIMA.');
    expect(server.turnRequests()).toHaveLength(before + 1);
    expect(userMessages()).toEqual(['Remember the codeword LIMA.', 'What was the codeword?', 'What was the codeword, again?']);
  });

  it('ask with a history that does not match the recorded turns is a stale_handle naming the message, and nothing is sent', async () => {
    const { handle, turn } = await sessions.start({ provider: 'anthropic', message: 'Remember the codeword KILO.' });
    const before = server.turnRequests().length;
    const edited: ChatMessage[] = [
      { role: 'user', content: 'Remember the codeword MIKE.' },
      { role: 'assistant', content: 'Noted.' },
      { role: 'user', content: 'What was the codeword?' },
    ];
    const err = await sessions.ask({ handle, messages: edited }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CalError);
    expect(err).toMatchObject({ kind: 'stale_handle', exitCode: exitCodes.stale_handle, field: 'messages[0]', handle: handle.id });
    expect((err as CalError).expected).toEqual({ role: 'user', content: 'Remember the codeword KILO.' });
    expect((err as CalError).actual).toEqual({ role: 'user', content: 'Remember the codeword MIKE.' });

    const recorded: ChatMessage[] = [
      { role: 'user', content: 'Remember the codeword KILO.' },
      { role: 'assistant', content: turn.answer ?? '' },
    ];
    const otherAnswer = await sessions.ask({ handle, messages: [recorded[0]!, { role: 'assistant', content: 'x' }, { role: 'user', content: 'new' }] }).catch((e: unknown) => e);
    expect(otherAnswer).toMatchObject({ kind: 'stale_handle', field: 'messages[1]', actual: { role: 'assistant', content: 'x' } });
    const longer = await sessions.ask({ handle, messages: [...recorded, { role: 'user', content: 'y' }, { role: 'assistant', content: 'z' }, { role: 'user', content: 'new' }] }).catch((e: unknown) => e);
    expect(longer).toMatchObject({ kind: 'stale_handle', field: 'messages[2]', expected: null, actual: { role: 'user', content: 'y' } });
    const shorter = await sessions.ask({ handle, messages: [{ role: 'user', content: 'new' }] }).catch((e: unknown) => e);
    expect(shorter).toMatchObject({ kind: 'stale_handle', field: 'messages[0]', actual: null });
    expect(server.turnRequests()).toHaveLength(before);
    const events: CalEvent[] = [];
    for await (const e of sessions.events(handle)) events.push(e);
    expect(events.map((e) => e.event)).toEqual(['running', 'completed', 'stale_handle', 'stale_handle', 'stale_handle', 'stale_handle']);
    expect(events[2]!.detail).toMatchObject({ field: 'messages[0]', actual: { role: 'user', content: 'Remember the codeword MIKE.' } });
  });

  it('ask without a handle starts a session; it needs a provider and no earlier messages', async () => {
    const started = await sessions.ask({ provider: 'anthropic', messages: [{ role: 'user', content: 'Remember the codeword NOVA.' }] });
    expect(started.turn.status).toBe('completed');
    expect(userMessages()).toEqual(['Remember the codeword NOVA.']);
    await expect(sessions.ask({ messages: [{ role: 'user', content: 'hello' }] })).rejects.toMatchObject({ kind: 'usage', exitCode: 2 });
    await expect(
      sessions.ask({ handle: null, provider: 'anthropic', messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: 'c' }] }),
    ).rejects.toMatchObject({ kind: 'usage' });
    await expect(sessions.ask({ handle: started.handle, messages: [] })).rejects.toMatchObject({ kind: 'usage' });
    await expect(sessions.ask({ handle: started.handle, messages: [{ role: 'user', content: 'Remember the codeword NOVA.' }, { role: 'assistant', content: started.turn.answer ?? '' }] })).rejects.toMatchObject({ kind: 'usage' });
    await expect(sessions.ask({ handle: started.handle, provider: 'openai', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ kind: 'stale_handle', field: 'provider', expected: 'anthropic', actual: 'openai' });
  });

  it('a turn the API failed is thrown as a TurnError (turn_failed) with the settled records', async () => {
    const err = await sessions.start({ provider: 'anthropic', message: 'Fail please [[cal:http=500]]' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TurnError);
    expect(err).toBeInstanceOf(CalError);
    const e = err as TurnError;
    expect(e.kind).toBe('turn_failed');
    expect(e.exitCode).toBe(10);
    expect(e.result.turn.status).toBe('failed');
    expect(e.turn).toBe(e.result.turn.id);
    expect(e.handle).toBe(e.result.handle.id);
  });

  it('typed errors for what does not apply, does not exist or cannot be sent', async () => {
    const { handle } = await sessions.start({ provider: 'anthropic', message: 'hello' });
    await expect(sessions.killTmux(handle)).rejects.toMatchObject({ kind: 'non_applicable', exitCode: 8 });
    await expect(sessions.continue('nosuchhandle', 'hi')).rejects.toMatchObject({ kind: 'not_found', exitCode: 3 });
    await expect(sessions.continue(handle, 'a\0b')).rejects.toMatchObject({ kind: 'usage' });
    await expect(sessions.continue(handle, '   ')).rejects.toMatchObject({ kind: 'usage' });
    await expect(sessions.continue('../escape', 'hi')).rejects.toMatchObject({ kind: 'usage' });
    await expect(sessions.continue(handle, 'hi', { model: 'another-model' })).rejects.toMatchObject({ kind: 'stale_handle', field: 'model' });
    const sent = server.turnRequests().length;
    await expect(sessions.continue(handle, 'hi', { transport: 'tmux' })).rejects.toMatchObject({ kind: 'non_applicable', exitCode: 8, field: 'transport', expected: 'api', actual: 'tmux' });
    await expect(sessions.ask({ handle, transport: 'structured', messages: [{ role: 'user', content: 'hello' }, { role: 'assistant', content: (await sessions.inspect(handle)).turns.at(-1)?.answer ?? '' }, { role: 'user', content: 'hi' }] })).rejects.toMatchObject({ kind: 'non_applicable', field: 'transport' });
    expect(server.turnRequests().length).toBe(sent);
    await expect(sessions.continue(handle, 'hi', { signal: AbortSignal.abort() })).rejects.toMatchObject({ kind: 'interrupted' });
  });

  it('inspect lists every handle and describes one; events end after the recorded ones unless followed', async () => {
    const { handle } = await sessions.start({ provider: 'anthropic', message: 'Remember the codeword OSCAR.', name: 'oscar' });
    const list = await sessions.inspect();
    expect(list.handles.map((h) => h.handle.id)).toContain(handle.id);
    expect(list.certifications).toEqual([]);
    const detail = await sessions.inspect('oscar');
    expect(detail).toMatchObject({ handle: { id: handle.id, name: 'oscar' }, currentPaneAlive: false, screen: null, attach: null, certification: [] });
    expect(detail.turns).toHaveLength(1);

    const recorded: CalEvent[] = [];
    for await (const e of sessions.events(handle)) recorded.push(e);
    expect(recorded.map((e) => e.event)).toEqual(['running', 'completed']);
    for (const e of recorded) expect(eventKinds).toContain(e.event);

    const stop = new AbortController();
    const followed: string[] = [];
    const following = (async () => {
      for await (const e of sessions.events(handle, { follow: true, signal: stop.signal, pollMs: 20 })) {
        followed.push(e.event);
        if (followed.length === 4) stop.abort();
      }
    })();
    await sessions.continue(handle, 'What was the codeword?');
    await following;
    expect(followed).toEqual(['running', 'completed', 'running', 'completed']);
  });

  it('a follow of events ends by itself once the handle is removed', async () => {
    const { handle } = await sessions.start({ provider: 'anthropic', message: 'Remember the codeword PAPA.' });
    const followed: string[] = [];
    const following = (async () => {
      for await (const e of sessions.events(handle, { follow: true, pollMs: 20 })) followed.push(e.event);
    })();
    await sessions.continue(handle, 'What was the codeword?');
    for (let i = 0; i < 150 && followed.length < 4; i++) await new Promise((r) => setTimeout(r, 20));
    expect(followed).toEqual(['running', 'completed', 'running', 'completed']);
    await sessions.remove(handle);
    const ended = await Promise.race([following.then(() => 'ended'), new Promise((r) => setTimeout(() => r('still following'), 3000))]);
    expect(ended).toBe('ended');
  });

  it('recover with nothing unfinished touches nothing', async () => {
    await expect(sessions.recover({ dryRun: true })).resolves.toEqual({ dryRun: true, turns: [], runs: [] });
  });

  it('the state directory defaults to CAL_STATE_DIR of the env it was given', async () => {
    const dir = path.join(root, 'from-env');
    const s = await openSessions({ env: { CAL_STATE_DIR: dir } });
    expect(s.stateDir).toBe(dir);
    expect((await fs.stat(dir)).mode & 0o777).toBe(0o700);
  });
});
