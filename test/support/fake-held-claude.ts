import { chmodSync, existsSync, readdirSync, writeFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { StructuredRunRequest } from '../../src/adapters/types.js';

/**
 * A CLI started before its message (StructuredTransport.start, structured-process's held
 * process), with a stand-in that only does what the test needs of `claude -p --input-format
 * stream-json`: it marks its start, reads stdin to its end, answers each whole user line with its
 * own pid, and with no line at all ends with status 0 and no result (as 2.1.328 does, measured).
 * The real binary's behaviour is proven by the end-to-end suite (test/e2e/structured-claude.test.ts).
 */
const FAKE = `#!/usr/bin/env node
const fs = require('node:fs');
const path = require('node:path');
const dir = process.env.FAKE_DIR;
fs.writeFileSync(path.join(dir, 'started-' + process.pid), process.argv.slice(2).join(' '));
let input = '';
process.stdin.on('data', (d) => (input += d));
process.stdin.on('end', () => {
  fs.writeFileSync(path.join(dir, 'input-' + process.pid), input);
  const id = process.argv[process.argv.indexOf('--resume') + 1] || 'fresh';
  for (const line of input.split('\\n').filter(Boolean)) {
    let text;
    try {
      text = JSON.parse(line).message.content[0].text;
    } catch {
      process.stderr.write('not a stream-json line\\n');
      process.exit(1);
    }
    console.log(JSON.stringify({ type: 'system', subtype: 'init', session_id: id }));
    console.log(JSON.stringify({ type: 'result', is_error: false, session_id: id, result: 'pid ' + process.pid + ': ' + text, terminal_reason: 'completed' }));
  }
  // As claude -p does after its result (its last transcript records), for as long as the test asks.
  const linger = Number(process.env.FAKE_LINGER_MS || 0);
  if (linger) setTimeout(() => fs.writeFileSync(path.join(dir, 'exited-' + process.pid), ''), linger);
});
`;

export interface FakeClaude {
  dir: string;
  exe: string;
  transcript: string;
}

/** A folder of its own with the stand-in as `claude` and a session transcript. */
export async function fakeClaude(prefix: string): Promise<FakeClaude> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), prefix));
  const exe = path.join(dir, 'claude');
  writeFileSync(exe, FAKE);
  chmodSync(exe, 0o755);
  const transcript = path.join(dir, 'session-1.jsonl');
  writeFileSync(transcript, '{"type":"user"}\n');
  return { dir, exe, transcript };
}

export const startedIn = (fake: FakeClaude) => readdirSync(fake.dir).filter((f) => f.startsWith('started-')).map((f) => Number(f.slice('started-'.length)));
export const gotInputIn = (fake: FakeClaude, pid: number) => existsSync(path.join(fake.dir, `input-${pid}`));
export const fakeEnv = (fake: FakeClaude) => ({ PATH: process.env.PATH ?? '', FAKE_DIR: fake.dir });
export const defaultConfig = { cwd: '', model: null, systemPrompt: null, mcpConfigPath: null, toolPolicy: 'default' as const };

/** A resumed turn of session-1 through the stand-in. */
export function fakeRequest(fake: FakeClaude, message: string, over: Partial<StructuredRunRequest> = {}): StructuredRunRequest {
  return {
    cli: { path: fake.exe, realPath: fake.exe, version: '2.1.328' },
    env: fakeEnv(fake),
    config: { ...defaultConfig, cwd: fake.dir },
    mode: 'resume',
    sessionId: 'session-1',
    message,
    timeoutMs: 10_000,
    knownTranscript: fake.transcript,
    ...over,
  };
}
