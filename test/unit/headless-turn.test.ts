/**
 * The headless runner Gemini CLI and Qwen Code share (src/adapters/headless-turn.ts), driven by
 * a stand-in CLI that replays a stream recorded from the real binary, then exits as told. The
 * real CLIs run through it in test/e2e/gemini.test.ts and qwen.test.ts (structured).
 */
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runHeadlessTurn as runGeminiTurn } from '../../src/adapters/gemini/headless.js';
import { runHeadlessTurn as runQwenTurn } from '../../src/adapters/qwen/headless.js';
import type { StructuredRunRequest } from '../../src/adapters/types.js';
import { fixturesDir } from '../support/fixtures.js';

/** Writes its stdin to `stdin.txt`, its stream to stdout, `FAKE_STDERR` to stderr, and exits `FAKE_EXIT`. */
const FAKE = `#!${process.execPath}
const fs = require('node:fs');
fs.writeFileSync(process.env.FAKE_DIR + '/stdin.txt', fs.readFileSync(0));
fs.writeFileSync(process.env.FAKE_DIR + '/argv.json', JSON.stringify(process.argv.slice(2)));
if (process.env.FAKE_STREAM) process.stdout.write(fs.readFileSync(process.env.FAKE_STREAM));
if (process.env.FAKE_STDERR) process.stderr.write(process.env.FAKE_STDERR + '\\n');
process.exitCode = Number(process.env.FAKE_EXIT ?? 0);
`;

let dir: string;
let exe: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'cal-headless-'));
  exe = path.join(dir, 'cli');
  writeFileSync(exe, FAKE);
  chmodSync(exe, 0o755);
});
afterEach(async () => fs.rm(dir, { recursive: true, force: true }));

function request(message: string, mode: 'start' | 'resume' = 'start'): StructuredRunRequest {
  return {
    cli: { path: exe, realPath: exe, version: '0' },
    env: {},
    config: { cwd: dir, model: null, systemPrompt: null, mcpConfigPath: null, toolPolicy: 'default' },
    mode,
    sessionId: 'sid',
    message,
    timeoutMs: 10_000,
  };
}

function launch(stream: string | null, exit = 0, stderr = '') {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', FAKE_DIR: dir, FAKE_EXIT: String(exit), FAKE_STDERR: stderr };
  if (stream) env.FAKE_STREAM = path.join(fixturesDir, `${stream}.jsonl`);
  return { argv: [exe, '--flag'], env, transcript: async (id: string) => `/sessions/${id}.jsonl` };
}

describe('one headless turn, Gemini CLI and Qwen Code alike', () => {
  it('Gemini: the message goes in argv and nothing on stdin; the stream\'s end and answer decide', async () => {
    const res = await runGeminiTurn(request('Remember the codeword KIWI.'), 'sid', launch('gemini-0.61.0-headless-remember.stream'));
    expect(res).toMatchObject({ status: 'completed', answer: 'OK, I will remember the codeword KIWI.', sessionId: 'aaaaaaaa-1111-4222-8333-444444444444', transcriptPath: '/sessions/aaaaaaaa-1111-4222-8333-444444444444.jsonl' });
    expect(readFileSync(path.join(dir, 'stdin.txt'), 'utf8')).toBe('');
  });

  it('Qwen: the message is one stream-json user line on stdin, byte for byte', async () => {
    const message = 'Run it [[cal:shell=echo hi]]\n  "quoted" ünï';
    const res = await runQwenTurn(request(message), 'sid', launch('qwen-0.24.4-headless-shell.stream'));
    expect(res.status).toBe('completed');
    expect(res.tools).toMatchObject([{ kind: 'shell' }]);
    expect(JSON.parse(readFileSync(path.join(dir, 'stdin.txt'), 'utf8'))).toEqual({ type: 'user', message: { role: 'user', content: message } });
  });

  it('a session whose CLI exits non-zero with no result is a failed turn with the CLI\'s last words on stderr', async () => {
    const stream = path.join(dir, 'no-result.jsonl');
    writeFileSync(stream, '{"type":"init","timestamp":"t","session_id":"s1","model":"m"}\n{"type":"system","subtype":"init","session_id":"s1"}\n');
    const env = { ...launch(null, 244, 'Error when talking to the API\nfinal words').env, FAKE_STREAM: stream };
    expect(await runGeminiTurn(request('x'), 'sid', { ...launch(null), env })).toMatchObject({ status: 'failed', answer: null, error: 'final words', sessionId: 's1' });
    expect(await runQwenTurn(request('x'), 'sid', { ...launch(null), env })).toMatchObject({ status: 'failed', answer: null, error: 'final words', sessionId: 's1' });
  });

  it('Gemini: a hook that stopped the agent is a failed turn with the CLI\'s reason, though the CLI said success and exited 0', async () => {
    const res = await runGeminiTurn(request('x'), 'sid', launch('gemini-0.61.0-headless-hook-stopped-write-file.stream'));
    expect(res).toMatchObject({ status: 'failed', answer: null, error: 'Agent execution stopped by hook: write refused by hook' });
  });

  it('each CLI\'s refusal of a resumed id is resume_unavailable; anything else before a session is turn_failed', async () => {
    await expect(runQwenTurn(request('x', 'resume'), 'sid', launch(null, 1, 'No saved session found with ID sid.'))).rejects.toMatchObject({ kind: 'resume_unavailable' });
    await expect(runGeminiTurn(request('x', 'resume'), 'sid', launch(null, 42, 'Error resuming session'))).rejects.toMatchObject({ kind: 'resume_unavailable' });
    await expect(runQwenTurn(request('x'), 'sid', launch(null, 1, 'No saved session found with ID sid.'))).rejects.toMatchObject({ kind: 'turn_failed', message: expect.stringMatching(/^qwen failed before it started the session \(exit 1\)/) });
    await expect(runGeminiTurn(request('x'), 'sid', launch(null, 3, 'bad flag'))).rejects.toMatchObject({ kind: 'turn_failed', message: expect.stringMatching(/^gemini -p failed before it started the session \(exit 3\): bad flag/) });
  });

  it('a session with no result event and a clean exit is a format change (internal), never a silent success', async () => {
    const stream = path.join(dir, 'no-result.jsonl');
    writeFileSync(stream, '{"type":"init","timestamp":"t","session_id":"s1","model":"m"}\n');
    const env = { ...launch(null).env, FAKE_STREAM: stream };
    await expect(runGeminiTurn(request('x'), 'sid', { ...launch(null), env })).rejects.toMatchObject({ kind: 'internal', message: expect.stringMatching(/^gemini -p ended \(exit 0\) without a result event/) });
  });
});
