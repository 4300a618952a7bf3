import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { AgentSessions } from '../../src/sessions/agent-sessions.js';
import { baseEnv, handleFromStderr, killStateTmux, runCal, scratchDir, type CalRun } from '../support/cal.js';
import { cliBin } from '../support/clis.js';
import { makeWorkDir, removeScratch } from '../support/scratch.js';

/**
 * The message reaches *this* session, once (issue 20, items 1 and 2), with the real Claude Code,
 * Codex and Pi: after cal's tmux server is killed, pane ids start again at %0, so a pane id alone
 * names another session's pane; and a turn that timed out in cal while the CLI still works on it
 * holds the handle until it ends.
 */
const providers = [
  { provider: 'claude-code', bin: 'claude', codeword: 'ALPHA' },
  { provider: 'codex', bin: 'codex', codeword: 'BRAVO' },
  { provider: 'pi', bin: 'pi', codeword: 'CHARLIE' },
] as const;

describe('one message, the right session', () => {
  let server: ModelServer;
  let root: string;
  let state: string;
  const envs = new Map<string, Record<string, string>>();
  const handles = new Map<string, string>();

  const cal = (provider: string, args: string[]): Promise<CalRun> => runCal(['--state-dir', state, ...args], { env: envs.get(provider) as Record<string, string> });

  beforeAll(async () => {
    server = await startModelServer({});
    root = await scratchDir('pane-identity');
    state = path.join(root, 'state');
    for (const p of providers) {
      envs.set(p.provider, await AgentSessions.scriptedModelEnv(p.provider, path.join(root, p.provider), server.url, baseEnv({})));
    }
  });

  afterAll(async () => {
    await killStateTmux(state);
    await server.close();
    await removeScratch(root);
  });

  it('three sessions, the tmux server killed, continued in another order than started: each recalls its own codeword', async () => {
    for (const p of providers) {
      const work = await makeWorkDir(root, `work-${p.provider}`);
      const run = await cal(p.provider, ['start', '--provider', p.provider, '--cwd', work, '--cli-path', cliBin(p.bin), '--timeout', '120', `Remember the codeword ${p.codeword}.`]);
      expect(run.code, run.stderr).toBe(0);
      handles.set(p.provider, handleFromStderr(run.stderr) as string);
    }
    await killStateTmux(state);
    // Pi first, then Codex: each new pane takes an id an older handle still records.
    for (const p of [...providers].reverse()) {
      const h = handles.get(p.provider) as string;
      const run = await cal(p.provider, ['continue', h, '--timeout', '120', 'What was the codeword?']);
      expect(run.code, `${p.provider}: ${run.stderr}`).toBe(0);
      expect(run.stdout.trim()).toBe(`The codeword was ${p.codeword}.`);
      const events = (await cal(p.provider, ['events', h])).stdout.trim().split('\n').map((l) => JSON.parse(l).event);
      expect(events.slice(-4), p.provider).toEqual(['lost_tmux', 'resuming', 'running', 'completed']);
    }
    // Each session's model requests carried only its own codeword.
    for (const entry of server.turnRequests()) {
      const words = providers.filter((p) => JSON.stringify(entry.userMessages).includes(p.codeword));
      expect(words.length).toBeLessThanOrEqual(1);
    }
  });

  it('a turn that timed out while the CLI still works holds the handle: busy at once, or --wait until it ends', async () => {
    const h = handles.get('claude-code') as string;
    const slow = await cal('claude-code', ['continue', h, '--timeout', '2', '--json', 'Tell me slowly [[cal:delay=12000]][[cal:reply=slow answer]]']);
    expect(slow.code, slow.stderr).toBe(14);
    const turnsBefore = (await cal('claude-code', ['inspect', h, '--json'])).json.turns.length as number;
    const busy = await cal('claude-code', ['continue', h, '--json', 'What was the codeword?']);
    expect(busy.code, busy.stderr).toBe(5);
    expect(busy.json.error.kind).toBe('busy');
    // The busy refusal is no turn (issue 41): the turn list is as it was.
    expect((await cal('claude-code', ['inspect', h, '--json'])).json.turns).toHaveLength(turnsBefore);
    const waited = await cal('claude-code', ['continue', h, '--wait=60', '--timeout', '60', 'What was the codeword?']);
    expect(waited.code, waited.stderr).toBe(0);
    expect(waited.stdout.trim()).toBe('The codeword was ALPHA.');
    const turns = (await cal('claude-code', ['inspect', h, '--json'])).json.turns as Array<{ id: string; status: string; answer: string | null; message: string }>;
    const slowTurn = turns.find((t) => t.message.startsWith('Tell me slowly'));
    // The timed-out turn was settled from the transcript with the CLI's own answer, not abandoned.
    expect(slowTurn).toMatchObject({ status: 'completed', answer: 'slow answer' });
    // Nor did it leave one behind: only the waited continue was added after it.
    expect(busy.json.error.turn === undefined || !turns.some((t) => t.id === busy.json.error.turn)).toBe(true);
    expect(turns).toHaveLength(turnsBefore + 1);
  });
});
