/**
 * Acceptance: the real Pi coding agent (pinned) against the scripted model through a custom
 * openai-completions provider, non-interactive (`pi -p`), with its own native resume
 * (`pi --session <file> -p`).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { makePiHome, runCli, type ModelCliHome } from '../support/model-homes.js';
import { checkCliNode } from '../../src/adapters/resolve.js';
import { cliBin } from '../support/clis.js';
import { realpathSync } from 'node:fs';

// Pi 1.x needs Node >= 22.19 on PATH (docs/node.md); CI puts Node 22 first on PATH for the CLIs
// in both of its runs. On an older node the CLI cannot start: this says so instead of failing.
const nodeTooOld = await checkCliNode(realpathSync(cliBin('pi')), { PATH: process.env.PATH ?? '' }).then(
  () => null,
  (e: unknown) => (e instanceof Error ? e.message : String(e)),
);
if (nodeTooOld) console.warn(`skipped: ${nodeTooOld}`);

describe.skipIf(nodeTooOld !== null)('Pi (pinned) against the scripted model', () => {
  let server: ModelServer;
  let home: ModelCliHome;

  beforeEach(async () => {
    server = await startModelServer();
    home = await makePiHome(server.url);
  });
  afterEach(async () => {
    await server.close();
    await home.cleanup();
  });

  async function ask(message: string, extra: string[]): Promise<string> {
    const run = await runCli(home, [...extra, '-p', message]);
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.exitCode, `stderr: ${run.stderr}\nstdout: ${run.stdout}`).toBe(0);
    return run.stdout.trim();
  }

  it('recalls the codeword through pi --session <file> -p', async () => {
    const session = path.join(home.root, 'session.jsonl');
    expect(await ask('Remember the codeword PLUM.', ['--session', session])).toBe('OK, I will remember the codeword PLUM.');
    expect(existsSync(session)).toBe(true);
    const linesBefore = readFileSync(session, 'utf8').trim().split('\n').length;
    server.clearLog();

    expect(await ask('What was the codeword?', ['--session', session])).toBe('The codeword was PLUM.');
    const turns = server.turnRequests();
    expect(turns).toHaveLength(1);
    const resumed = turns[0]!;
    expect(resumed.dialect).toBe('openai-chat');
    expect(resumed.userMessages).toEqual(['Remember the codeword PLUM.', 'What was the codeword?']);
    // The same session file was appended.
    const lines = readFileSync(session, 'utf8').trim().split('\n');
    expect((JSON.parse(lines[0]!) as { type: string }).type).toBe('session');
    expect(lines.length).toBeGreaterThan(linesBefore);
  });

  it('runs the bash tool and answers from its result', async () => {
    expect(await ask('Run [[cal:shell=echo pi-tool-ok]]', ['--no-session'])).toBe('Tool finished: pi-tool-ok');
    expect(server.turnRequests().map((t) => t.reply)).toEqual(['[tool call bash] echo pi-tool-ok', 'Tool finished: pi-tool-ok']);
  });

  it('does not recall the codeword in a fresh session (no resume)', async () => {
    const session = path.join(home.root, 'first.jsonl');
    expect(await ask('Remember the codeword KUMQUAT.', ['--session', session])).toBe('OK, I will remember the codeword KUMQUAT.');
    server.clearLog();

    expect(await ask('What was the codeword?', ['--session', path.join(home.root, 'second.jsonl')])).toBe('I do not know the codeword.');
    expect(server.turnRequests().map((t) => t.userMessages)).toEqual([['What was the codeword?']]);
  });
});
