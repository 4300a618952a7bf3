import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tmuxSocketFor } from '../../src/engine/tmux-socket.js';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { AgentSessions } from '../../src/sessions/agent-sessions.js';
import { baseEnv, killStateTmux, runCal, scratchDir } from '../support/cal.js';
import { cliBin } from '../support/clis.js';
import { makeWorkDir, removeScratch } from '../support/scratch.js';

/**
 * Issue 13, item 6, the rest: a structured turn carries a message past the argv limit (Codex
 * reads it on stdin), and an environment too large for one tmux command is a usage error that
 * says so, not an internal one.
 */
const pad = (kb: number) => ' filler'.repeat(Math.ceil((kb * 1024) / 7));

describe('launch limits', () => {
  let server: ModelServer;
  let root: string;

  beforeAll(async () => {
    server = await startModelServer({});
    root = await scratchDir('launch-limits');
  });
  afterAll(async () => {
    await killStateTmux(path.join(root, 'state'));
    await killStateTmux(path.join(root, 'state-env'));
    await server.close();
    await removeScratch(root);
  });

  it('codex structured: a 200 KB first message and a 200 KB resume message arrive whole', async () => {
    const env = await AgentSessions.scriptedModelEnv('codex', path.join(root, 'codex'), server.url, baseEnv({}));
    const work = await makeWorkDir(root, 'codex-work');
    const state = path.join(root, 'state');
    const start = await runCal(['--state-dir', state, 'start', '--provider', 'codex', '--transport', 'structured', '--cwd', work, '--cli-path', cliBin('codex'), '--timeout', '120', '--json', '-'], { env, input: `Remember the codeword BASALT.${pad(200)}` });
    expect(start.code, start.stdout + start.stderr).toBe(0);
    const handle = (typeof start.json.handle === 'string' ? start.json.handle : start.json.handle.id) as string;
    const next = await runCal(['--state-dir', state, 'continue', handle, '--timeout', '120', '--json', '-'], { env, input: `What was the codeword?${pad(200)}` });
    expect(next.code, next.stdout).toBe(0);
    expect(next.json.turn.answer).toBe('The codeword was BASALT.');
  });

  it('an environment of 1,500 variables is usage (2) naming the variables, before anything runs', async () => {
    const many = Object.fromEntries(Array.from({ length: 1500 }, (_, i) => [`CAL_TEST_VARIABLE_NUMBER_${i}`, 'x']));
    const env = { ...(await AgentSessions.scriptedModelEnv('claude-code', path.join(root, 'claude'), server.url, baseEnv({}))), ...many };
    const work = await makeWorkDir(root, 'claude-work');
    const run = await runCal(['--state-dir', path.join(root, 'state-env'), 'start', '--provider', 'claude-code', '--cwd', work, '--cli-path', cliBin('claude'), '--json', 'hello'], { env });
    expect(run.code, run.stdout + run.stderr).toBe(2);
    expect(run.json.error.kind).toBe('usage');
    expect(run.json.error.message).toMatch(/environment variables/);
    expect(server.turnRequests().filter((r) => r.lastUserMessage === 'hello')).toEqual([]);
    // The tmux server cal started for the launch does not stay behind with no session.
    const socket = await tmuxSocketFor(path.join(root, 'state-env', 'tmux'));
    let left = true;
    for (let i = 0; i < 20 && left; i++) {
      left = (await execa('tmux', ['-S', socket, 'list-sessions'], { reject: false })).exitCode === 0 || (await execa('tmux', ['-S', socket, 'show-options', '-g'], { reject: false })).exitCode === 0;
      if (left) await new Promise((r) => setTimeout(r, 100));
    }
    expect(left).toBe(false);
  });
});
