/**
 * Acceptance: the real Gemini CLI (pinned) against the scripted model, non-interactive
 * (`gemini -p -o json`), with its own native resume (`--resume <session uuid>`). `-m` names a
 * model so no router request is made.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { GEMINI_TEST_MODEL, makeGeminiHome, runCli, type ModelCliHome } from '../support/model-homes.js';

interface GeminiResult {
  session_id: string;
  response: string;
}

describe('Gemini CLI 0.61.0 against the scripted model', () => {
  let server: ModelServer;
  let home: ModelCliHome;

  beforeEach(async () => {
    server = await startModelServer();
    home = await makeGeminiHome(server.url);
  });
  afterEach(async () => {
    await server.close();
    await home.cleanup();
  });

  async function ask(message: string, extra: string[] = []): Promise<GeminiResult> {
    const run = await runCli(home, ['-m', GEMINI_TEST_MODEL, '-o', 'json', ...extra, '-p', message]);
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.exitCode, `stderr: ${run.stderr}\nstdout: ${run.stdout}`).toBe(0);
    return JSON.parse(run.stdout) as GeminiResult;
  }

  it('recalls the codeword through gemini -p --resume', async () => {
    const first = await ask('Remember the codeword PEAR.');
    expect(first.response).toBe('OK, I will remember the codeword PEAR.');
    expect(first.session_id).toMatch(/^[0-9a-f-]{36}$/);
    server.clearLog();

    const second = await ask('What was the codeword?', ['--resume', first.session_id]);
    expect(second.session_id).toBe(first.session_id);
    expect(second.response).toBe('The codeword was PEAR.');

    const turns = server.turnRequests();
    expect(turns).toHaveLength(1);
    const resumed = turns[0]!;
    expect(resumed.dialect).toBe('gemini');
    expect(resumed.path).toBe(`/v1beta/models/${GEMINI_TEST_MODEL}:streamGenerateContent`);
    // The <session_context> block is not a user message; the earlier turn once, one new message.
    expect(resumed.userMessages).toEqual(['Remember the codeword PEAR.', 'What was the codeword?']);
  });

  it('runs run_shell_command (yolo) and answers from its result', async () => {
    const r = await ask('Run [[cal:shell=echo gemini-tool-ok]]', ['--approval-mode', 'yolo']);
    expect(r.response).toBe('Tool finished: gemini-tool-ok');
    expect(server.turnRequests().map((t) => t.reply)).toEqual(['[tool call run_shell_command] echo gemini-tool-ok', 'Tool finished: gemini-tool-ok']);
  });

  it('does not recall the codeword in a fresh session (no resume)', async () => {
    const first = await ask('Remember the codeword FIG.');
    expect(first.response).toBe('OK, I will remember the codeword FIG.');
    server.clearLog();

    const fresh = await ask('What was the codeword?');
    expect(fresh.session_id).not.toBe(first.session_id);
    expect(fresh.response).toBe('I do not know the codeword.');
    expect(server.turnRequests().map((t) => t.userMessages)).toEqual([['What was the codeword?']]);
  });
});
