import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { baseEnv, scratchDir } from '../support/cal.js';
import { makeWorkDir } from '../support/claude-home.js';
import { calBin } from '../support/clis.js';
import { codexTestEnv } from '../support/codex-home.js';

/**
 * `--stream` on the structured transport: the real `codex exec --json` reports items as they
 * complete, and cal prints them before the turn ends.
 */
describe('--stream with codex exec (structured transport)', () => {
  let server: ModelServer;
  let env: Record<string, string>;
  let state: string;
  let work: string;

  beforeAll(async () => {
    server = await startModelServer({});
    const root = await scratchDir('stream-codex');
    state = path.join(root, 'state');
    work = await makeWorkDir(root);
    env = (await codexTestEnv(root, server.url, baseEnv({}))).env;
  });

  afterAll(async () => {
    await server.close();
  });

  it('a finished tool call is streamed seconds before the turn ends', async () => {
    const lines: { at: number; value: any }[] = [];
    const child = spawn('node', [calBin, '--state-dir', state, 'start', '--provider', 'codex', '--transport', 'structured', '--cwd', work, '--stream', '--json', 'Two tools [[cal:shell=echo FIRST-OUT]] [[cal:shell=sleep 3; echo SECOND-OUT]]'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    createInterface({ input: child.stdout }).on('line', (text) => lines.push({ at: Date.now(), value: JSON.parse(text) }));
    const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? -1)));
    expect(code).toBe(0);
    const final = lines.at(-1)!;
    expect(final.value.turn).toMatchObject({ status: 'completed', answer: 'Tool finished: SECOND-OUT' });
    const first = lines.find((l) => l.value.type === 'tool' && l.value.name === 'echo FIRST-OUT');
    expect(first).toBeDefined();
    expect(final.at - first!.at).toBeGreaterThanOrEqual(2000);
    expect(lines.some((l) => l.value.type === 'text' && l.value.text === 'Tool finished: SECOND-OUT')).toBe(true);
  });
});
