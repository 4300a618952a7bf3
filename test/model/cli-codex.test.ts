/**
 * Acceptance: the real Codex CLI (pinned) against the scripted model through a custom Responses
 * provider, non-interactive (`codex exec --json`), with its own native resume
 * (`codex exec resume --json <thread id>`). exec mode starts no daemon.
 */
import { appendFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { jsonLines, makeCodexHome, runCli, type ModelCliHome } from '../support/model-homes.js';

const mcpEcho = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'mcp-echo.mjs');

interface ExecResult {
  threadId: string;
  messages: string[];
  events: Array<Record<string, unknown>>;
}

describe('Codex 0.169.0 against the scripted model', () => {
  let server: ModelServer;
  let home: ModelCliHome;

  beforeEach(async () => {
    server = await startModelServer();
    home = await makeCodexHome(server.url);
  });
  afterEach(async () => {
    await server.close();
    await home.cleanup();
  });

  async function exec(args: string[]): Promise<ExecResult> {
    const run = await runCli(home, ['exec', ...args]);
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.exitCode, `stderr: ${run.stderr}\nstdout: ${run.stdout}`).toBe(0);
    const events = jsonLines(run.stdout);
    const started = events.find((e) => e.type === 'thread.started');
    const messages = events
      .filter((e) => e.type === 'item.completed' && (e.item as { type?: string }).type === 'agent_message')
      .map((e) => (e.item as { text: string }).text);
    return { threadId: String(started?.thread_id ?? ''), messages, events };
  }

  it('recalls the codeword through codex exec resume', async () => {
    const first = await exec(['--json', '--skip-git-repo-check', 'Remember the codeword ZEBRA.']);
    expect(first.messages).toEqual(['OK, I will remember the codeword ZEBRA.']);
    expect(first.threadId).toMatch(/^[0-9a-f-]{36}$/);
    server.clearLog();

    const second = await exec(['resume', '--json', '--skip-git-repo-check', first.threadId, 'What was the codeword?']);
    expect(second.threadId).toBe(first.threadId);
    expect(second.messages).toEqual(['The codeword was ZEBRA.']);

    const turns = server.turnRequests();
    expect(turns).toHaveLength(1);
    const resumed = turns[0]!;
    expect(resumed.dialect).toBe('openai-responses');
    expect(resumed.sessionKey).toBe(first.threadId);
    expect(resumed.userMessages).toEqual(['Remember the codeword ZEBRA.', 'What was the codeword?']);
  });

  it('runs exec_command and a namespaced MCP tool, answering from each result', async () => {
    await appendFile(
      path.join(home.configDir, 'config.toml'),
      `\n[mcp_servers.probe]\ncommand = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(mcpEcho)}]\ndefault_tools_approval_mode = "approve"\n`,
    );
    const shell = await exec(['--json', '--skip-git-repo-check', 'Run it [[cal:shell=echo codex-tool-ok]]']);
    expect(shell.messages).toEqual(['Tool finished: codex-tool-ok']);
    expect(shell.events.some((e) => (e.item as { type?: string } | undefined)?.type === 'command_execution')).toBe(true);

    const mcp = await exec(['--json', '--skip-git-repo-check', 'Probe [[cal:mcp=probe.echo {"text":"ping-from-model"}]]']);
    expect(mcp.messages).toEqual(['Tool finished: echo: ping-from-model']);
    const call = mcp.events.find((e) => e.type === 'item.completed' && (e.item as { type?: string }).type === 'mcp_tool_call');
    expect(call?.item).toMatchObject({ server: 'probe', tool: 'echo', arguments: { text: 'ping-from-model' }, status: 'completed' });
  });

  it('does not recall the codeword in a fresh session (no resume)', async () => {
    const first = await exec(['--json', '--skip-git-repo-check', 'Remember the codeword QUOKKA.']);
    expect(first.messages).toEqual(['OK, I will remember the codeword QUOKKA.']);
    server.clearLog();

    const fresh = await exec(['--json', '--skip-git-repo-check', 'What was the codeword?']);
    expect(fresh.threadId).not.toBe(first.threadId);
    expect(fresh.messages).toEqual(['I do not know the codeword.']);
    expect(server.turnRequests().map((t) => t.userMessages)).toEqual([['What was the codeword?']]);
  });
});
