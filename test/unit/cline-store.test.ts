import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findLaunchedSession, sessionFiles, syncMirror } from '../../src/adapters/cline/store.js';

/**
 * cal's mirror of a Cline session (store.ts): the manifest and the conversation Cline rewrites
 * whole, appended as JSONL only where they changed; and the binding of a launch to its session by
 * the mark in the environment of the process its manifest names.
 */
const root = mkdtempSync(path.join(os.tmpdir(), 'cal-cline-store-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function writeSession(sessions: string, id: string, status: string, pid: number, messages: unknown[]): ReturnType<typeof sessionFiles> {
  const files = sessionFiles(sessions, id);
  mkdirSync(files.dir, { recursive: true });
  writeFileSync(files.manifest, JSON.stringify({ session_id: id, pid, status, cwd: '/work', started_at: new Date().toISOString() }));
  writeFileSync(files.messages, JSON.stringify({ version: 1, messages }));
  return files;
}
const user = (text: string, ts: number) => ({ id: `u${ts}`, role: 'user', content: [{ type: 'text', text: `<user_input mode="act">${text}</user_input>` }], ts });
const lines = (file: string) => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { kind: string; index?: number; status?: string });

describe("cal's mirror of a Cline session", () => {
  it('appends the header, each message and the status once, then only what changed', async () => {
    const sessions = path.join(root, 'mirror');
    const files = writeSession(sessions, '1_abc', 'running', 1, [user('hello', 1)]);
    await syncMirror(files.mirror);
    expect(lines(files.mirror).map((r) => r.kind)).toEqual(['cline-mirror', 'message', 'status']);
    await syncMirror(files.mirror);
    expect(lines(files.mirror)).toHaveLength(3);
    writeSession(sessions, '1_abc', 'idle', 1, [user('hello', 1), { role: 'assistant', content: [{ type: 'text', text: 'hi' }], ts: 2 }]);
    await syncMirror(files.mirror);
    expect(lines(files.mirror).slice(3)).toMatchObject([{ kind: 'message', index: 1 }, { kind: 'status', status: 'idle' }]);
  });

  it('a conversation caught in the middle of a rewrite is read again later, never taken as empty', async () => {
    const sessions = path.join(root, 'torn');
    const files = writeSession(sessions, '2_abc', 'running', 1, [user('hello', 1)]);
    writeFileSync(files.messages, '{"version":1,"messages":[{"role":"us');
    await syncMirror(files.mirror);
    expect(lines(files.mirror).map((r) => r.kind)).toEqual(['cline-mirror']);
  });

  it('binds the session whose process carries the launch mark, not another with the same message', async () => {
    const sessions = path.join(root, 'bind');
    const child = spawn('sleep', ['30'], { env: { ...process.env, CAL_CLINE_LAUNCH: 'cal-launch-ours' }, stdio: 'ignore' });
    const other = spawn('sleep', ['30'], { env: { ...process.env, CAL_CLINE_LAUNCH: 'cal-launch-theirs' }, stdio: 'ignore' });
    try {
      writeSession(sessions, '3_ours', 'running', child.pid!, [user('Remember KIWI.', 1)]);
      writeSession(sessions, '3_theirs', 'running', other.pid!, [user('Remember KIWI.', 1)]);
      const holds = (p: string) => p.includes('Remember KIWI.');
      expect(await findLaunchedSession(sessions, '/work', 'CAL_CLINE_LAUNCH=cal-launch-ours', holds, new Date())).toBe('3_ours');
      expect(await findLaunchedSession(sessions, '/elsewhere', 'CAL_CLINE_LAUNCH=cal-launch-ours', holds, new Date())).toBeNull();
      expect(await findLaunchedSession(sessions, '/work', 'CAL_CLINE_LAUNCH=cal-launch-ours', (p) => p.includes('other'), new Date())).toBeNull();
    } finally {
      child.kill();
      other.kill();
    }
  });
});
