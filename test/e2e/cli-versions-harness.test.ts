import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claudeCodeAdapter } from '../../src/adapters/claude-code/index.js';
import { codexAdapter } from '../../src/adapters/codex/index.js';
import { adapterHarness, type Harness } from '../support/adapter-harness.js';
import { matrixBin, matrixVersions, missingMatrix, type MatrixProvider } from '../support/cli-matrix.js';

/**
 * TEMPORARY, until the engine hands adapters a session dir and tails their signal file: the
 * issue 16 acceptance for the version matrix, driving each adapter and real tmux directly
 * (test/support/adapter-harness.ts) against the scripted model. test/e2e/cli-versions.test.ts
 * proves the same through `cal`. Opt-in (CAL_ADAPTER_HARNESS=1) so CI runs the proof once;
 * run under `flock /tmp/cal-realcli.lock`.
 */
const enabled = process.env.CAL_ADAPTER_HARNESS === '1';
const installed = (p: MatrixProvider, v: string) => enabled && !missingMatrix(p).includes(v);
/**
 * A tool call that takes 40 s. Not `sleep 40; echo …`: Claude Code 2.1.3xx refuses a long sleep
 * followed by a command ("Blocked: sleep 40 followed by: …, use Monitor").
 */
const FORTY_SECOND_TOOL = `Wait for it [[cal:shell=node -e "setTimeout(() => console.log('slept-forty'), 40000)"]]`;
const oldestAndNewest = (p: MatrixProvider) => [matrixVersions(p)[0]!, matrixVersions(p).at(-1)!];

/** "Within a second of the CLI finishing": of its last end record or Stop hook (the final answer record comes before those). */
function report(version: string, what: string, turn: Awaited<ReturnType<Harness['turn']>>): void {
  console.info(`Claude Code ${version}: the ${what} ended ${turn.endedAt - turn.cliFinishedAt!} ms after the CLI finished it, ${turn.endedAt - turn.lastAssistantAt!} ms after its final answer record`);
}

function ended(turn: Awaited<ReturnType<Harness['turn']>>) {
  return turn.observation.phase === 'ended' ? turn.observation : null;
}

describe.each(matrixVersions('claude-code'))('Claude Code %s (adapter + tmux)', (version) => {
  const skip = !installed('claude-code', version);
  let h: Harness;
  beforeAll(async () => {
    if (skip) return;
    h = await adapterHarness(claudeCodeAdapter, matrixBin('claude-code', version), { prefix: `h-claude-${version}` });
    // The user's own settings: Bash runs without asking, in accept-edits mode (auto mode, the
    // default of 2.1.3xx, wants a server-side check the scripted model does not give).
    await fs.mkdir(path.join(h.env.HOME!, '.claude'), { recursive: true });
    await fs.writeFile(path.join(h.env.HOME!, '.claude', 'settings.json'), JSON.stringify({ skipDangerousModePermissionPrompt: true, permissions: { defaultMode: 'acceptEdits', allow: ['Bash'] } }));
  });
  afterAll(async () => {
    await h?.close();
  });

  it.skipIf(skip)('start → paste → kill-tmux → native resume → recall, each turn on its own answer', async () => {
    expect(h.cli.version).toBe(version);
    expect(ended(await h.turn('Remember the codeword PLUM.'))).toMatchObject({ status: 'completed', answer: 'OK, I will remember the codeword PLUM.' });
    const transcript = h.transcriptPath();
    expect(ended(await h.turn('What was the codeword?'))).toMatchObject({ status: 'completed', answer: 'The codeword was PLUM.' });
    await h.kill();
    h.server.clearLog();
    expect(ended(await h.turn('What was the codeword, again?'))).toMatchObject({ status: 'completed', answer: 'The codeword was PLUM.' });
    // The resumed turn went on in the same transcript, and the model saw each earlier turn once.
    expect(h.transcriptPath()).toBe(transcript);
    const resumed = h.server.turnRequests().find((r) => r.lastUserMessage === 'What was the codeword, again?')!;
    expect(resumed.userMessages.filter((m) => m === 'Remember the codeword PLUM.')).toHaveLength(1);
  }, 240_000);

  it.skipIf(skip)('a 5-second turn ends within a second of the CLI finishing', async () => {
    const turn = await h.turn('[[cal:delay=5000]] Take your time.');
    expect(ended(turn)).toMatchObject({ status: 'completed', answer: 'Received: Take your time.' });
    report(version, '5 s turn', turn);
    expect(turn.endedAt - turn.cliFinishedAt!).toBeLessThan(1000);
  }, 60_000);

  it.skipIf(skip)('a 40-second tool turn ends within a second of the CLI finishing', async () => {
    const turn = await h.turn(FORTY_SECOND_TOOL, 120_000);
    expect(ended(turn)).toMatchObject({ status: 'completed', answer: 'Tool finished: slept-forty' });
    report(version, '40 s tool turn', turn);
    expect(turn.endedAt - turn.cliFinishedAt!).toBeLessThan(1000);
  }, 150_000);
});

describe.each(oldestAndNewest('claude-code'))('Claude Code %s: a UserPromptSubmit hook that blocks the prompt (adapter + tmux)', (version) => {
  const skip = !installed('claude-code', version);
  let h: Harness;
  beforeAll(async () => {
    if (skip) return;
    h = await adapterHarness(claudeCodeAdapter, matrixBin('claude-code', version), { prefix: `h-block-${version}` });
    await fs.mkdir(path.join(h.env.HOME!, '.claude'), { recursive: true });
    const hook = `${process.execPath} -e 'let d="";process.stdin.on("data",c=>d+=c).on("end",()=>{if(d.includes("BLOCKME")){process.stderr.write("no BLOCKME here");process.exit(2)}})'`;
    await fs.writeFile(
      path.join(h.env.HOME!, '.claude', 'settings.json'),
      JSON.stringify({ skipDangerousModePermissionPrompt: true, hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: hook }] }] } }),
    );
  });
  afterAll(async () => {
    await h?.close();
  });

  it.skipIf(skip)("settles as failed with the hook's text; the model never sees it", async () => {
    expect(ended(await h.turn('Remember the codeword PEAR.'))).toMatchObject({ status: 'completed' });
    await h.kill();
    const blocked = ended(await h.turn('BLOCKME please', 30_000));
    expect(blocked).toMatchObject({ status: 'failed', answer: null });
    expect(blocked?.error).toContain('no BLOCKME here');
    expect(h.server.turnRequests().some((r) => (r.lastUserMessage ?? '').includes('BLOCKME'))).toBe(false);
  }, 120_000);
});

describe.each(oldestAndNewest('codex'))('Codex %s (adapter + tmux)', (version) => {
  const skip = !installed('codex', version);
  let h: Harness;
  beforeAll(async () => {
    if (!skip) h = await adapterHarness(codexAdapter, matrixBin('codex', version), { prefix: `h-codex-${version}` });
  });
  afterAll(async () => {
    await h?.close();
  });

  it.skipIf(skip)('start → paste → kill-tmux → native resume → recall', async () => {
    expect(h.cli.version).toBe(version);
    expect(ended(await h.turn('Remember the codeword PLUM.'))).toMatchObject({ status: 'completed', answer: 'OK, I will remember the codeword PLUM.' });
    expect(ended(await h.turn('What was the codeword?'))).toMatchObject({ status: 'completed', answer: 'The codeword was PLUM.' });
    await h.kill();
    expect(ended(await h.turn('What was the codeword, again?'))).toMatchObject({ status: 'completed', answer: 'The codeword was PLUM.' });
  }, 180_000);
});
