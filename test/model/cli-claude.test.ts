/**
 * Acceptance: the real Claude Code binary (pinned) against the scripted model, non-interactive
 * (`claude -p`), with its own native resume (`--resume <session id>`).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { makeClaudeHome, runCli, type ModelCliHome } from '../support/model-homes.js';

const mcpEcho = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'mcp-echo.mjs');

interface ClaudeResult {
  result: string;
  session_id: string;
  is_error: boolean;
}

describe('Claude Code 2.1.328 against the scripted model', () => {
  let server: ModelServer;
  let home: ModelCliHome;

  beforeEach(async () => {
    server = await startModelServer();
    home = await makeClaudeHome(server.url);
  });
  afterEach(async () => {
    await server.close();
    await home.cleanup();
  });

  async function ask(message: string, extra: string[] = []): Promise<ClaudeResult> {
    const run = await runCli(home, ['-p', '--output-format', 'json', ...extra, '--', message]);
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.exitCode, `stderr: ${run.stderr}\nstdout: ${run.stdout}`).toBe(0);
    return JSON.parse(run.stdout) as ClaudeResult;
  }

  it('recalls the codeword through claude -p --resume', async () => {
    const first = await ask('Remember the codeword MANGO.');
    expect(first.result).toBe('OK, I will remember the codeword MANGO.');
    expect(first.session_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(server.turnRequests()).toHaveLength(1);
    server.clearLog();

    const second = await ask('What was the codeword?', ['--resume', first.session_id]);
    expect(second.result).toBe('The codeword was MANGO.');
    expect(second.session_id).toBe(first.session_id);

    const turns = server.turnRequests();
    expect(turns).toHaveLength(1);
    const resumed = turns[0]!;
    expect(resumed.dialect).toBe('anthropic');
    expect(resumed.sessionKey).toBe(first.session_id);
    // The earlier turn exactly once, then exactly one new user message.
    expect(resumed.userMessages).toEqual(['Remember the codeword MANGO.', 'What was the codeword?']);
    expect(resumed.reply).toBe('The codeword was MANGO.');
  });

  it('runs a Bash tool call and answers from its result', async () => {
    const r = await ask('Check [[cal:shell=echo claude-tool-ok]]', ['--allowedTools', 'Bash']);
    expect(r.result).toBe('Tool finished: claude-tool-ok');
    const turns = server.turnRequests();
    expect(turns.map((t) => t.reply)).toEqual(['[tool call Bash] echo claude-tool-ok', 'Tool finished: claude-tool-ok']);
  });

  it('calls an MCP tool as mcp__SERVER__TOOL and answers from its result', async () => {
    const mcpConfig = JSON.stringify({ mcpServers: { probe: { command: process.execPath, args: [mcpEcho] } } });
    const r = await ask('Probe [[cal:mcp=probe.echo {"text":"ping-claude"}]]', ['--mcp-config', mcpConfig, '--allowedTools', 'mcp__probe__echo']);
    expect(r.result).toBe('Tool finished: echo: ping-claude');
    expect(server.turnRequests().map((t) => t.reply)).toEqual([
      '[tool call mcp__probe__echo] probe.echo {"text":"ping-claude"}',
      'Tool finished: echo: ping-claude',
    ]);
  });

  it('does not recall the codeword in a fresh session (no resume)', async () => {
    const first = await ask('Remember the codeword PAPAYA.');
    expect(first.result).toBe('OK, I will remember the codeword PAPAYA.');
    server.clearLog();

    const fresh = await ask('What was the codeword?');
    expect(fresh.result).toBe('I do not know the codeword.');
    expect(fresh.session_id).not.toBe(first.session_id);
    const turns = server.turnRequests();
    expect(turns).toHaveLength(1);
    expect(turns[0]!.userMessages).toEqual(['What was the codeword?']);
  });
});
