import { mkdtempSync, mkdirSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkAcpCommand, splitCommandLine } from '../../src/adapters/acp-command.js';
import { keepSessionFileFromLoad } from '../../src/adapters/acp/gemini-load.js';
import { acpMcpServers, allowedByPolicy, pickOption } from '../../src/adapters/acp/policy.js';
import { AcpTurnReader } from '../../src/adapters/acp/updates.js';
import { CalError } from '../../src/errors.js';

const chunk = (kind: string, text: string) => ({ sessionUpdate: kind, content: { type: 'text', text } });

describe('the ACP turn reader', () => {
  it('takes nothing before the prompt (a load replays history), then the agent chunks of the turn', () => {
    const r = new AcpTurnReader('What was the codeword?');
    r.feed(chunk('user_message_chunk', 'Remember KIWI.'));
    r.feed(chunk('agent_message_chunk', 'OK, KIWI.'));
    r.feed({ sessionUpdate: 'available_commands_update', availableCommands: [] });
    r.promptSent();
    r.feed(chunk('agent_message_chunk', 'The code'));
    r.feed(chunk('agent_message_chunk', 'word was KIWI.'));
    expect(r.historyUpdates).toBe(3);
    expect(r.answer).toBe('The codeword was KIWI.');
  });

  it('text before a tool call is not the answer; the tool carries its kind, input, output and status', () => {
    const r = new AcpTurnReader('go');
    r.promptSent();
    r.feed(chunk('agent_message_chunk', 'Let me run it.'));
    // The call's own content describes it (Gemini's shape): not the tool's output.
    r.feed({ sessionUpdate: 'tool_call', toolCallId: 't1', title: 'echo hi', kind: 'execute', status: 'pending', rawInput: { command: 'echo hi' }, content: [{ type: 'content', content: { type: 'text', text: '(Run: echo hi)' } }] });
    r.feed({ sessionUpdate: 'tool_call_update', toolCallId: 't1', status: 'completed', content: [{ type: 'content', content: { type: 'text', text: 'hi' } }] });
    r.feed(chunk('agent_message_chunk', 'Done: hi'));
    expect(r.answer).toBe('Done: hi');
    expect(r.toolActivity).toEqual([{ kind: 'shell', name: 'echo hi', input: { command: 'echo hi' }, output: 'hi', status: 'completed' }]);
  });

  it('an echo of the prompt is no replay; another user message after the prompt drops the text before it', () => {
    const r = new AcpTurnReader('new question');
    r.promptSent();
    r.feed(chunk('user_message_chunk', 'new question'));
    r.feed(chunk('agent_message_chunk', 'old answer'));
    r.feed(chunk('user_message_chunk', 'an earlier question'));
    expect(r.lateReplays).toBe(1);
    expect(r.answer).toBeNull();
  });
});

describe('ACP permissions by tool policy', () => {
  const options = [
    { optionId: 'a', kind: 'allow_always' },
    { optionId: 'o', kind: 'allow_once' },
    { optionId: 'r', kind: 'reject_once' },
  ];
  it('maps each policy onto the tool kinds', () => {
    expect(allowedByPolicy('bypass', 'execute')).toBe(true);
    expect(allowedByPolicy('default', 'read')).toBe(false);
    expect(allowedByPolicy('read-only', 'search')).toBe(true);
    expect(allowedByPolicy('read-only', 'edit')).toBe(false);
    expect(allowedByPolicy('accept-edits', 'edit')).toBe(true);
    expect(allowedByPolicy('accept-edits', 'execute')).toBe(false);
    expect(allowedByPolicy('accept-edits', undefined)).toBe(false);
  });
  it('answers with a once option first, and none when the agent offered none of that sense', () => {
    expect(pickOption(options, true)).toBe('o');
    expect(pickOption(options, false)).toBe('r');
    expect(pickOption([{ optionId: 'a', kind: 'allow_always' }], false)).toBeNull();
  });
});

describe('the session MCP config as ACP servers', () => {
  it('turns command and url servers into ACP stdio and http servers', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cal-acp-mcp-'));
    const file = path.join(dir, 'mcp.json');
    writeFileSync(file, JSON.stringify({ mcpServers: { probe: { command: 'node', args: ['p.js'], env: { K: 'v' } }, web: { url: 'http://127.0.0.1:1/mcp', headers: { H: 'x' } } } }));
    expect(acpMcpServers(file)).toEqual([
      { name: 'probe', command: 'node', args: ['p.js'], env: [{ name: 'K', value: 'v' }] },
      { type: 'http', name: 'web', url: 'http://127.0.0.1:1/mcp', headers: [{ name: 'H', value: 'x' }] },
    ]);
    expect(acpMcpServers(null)).toEqual([]);
    rmSync(dir, { recursive: true });
  });
});

describe('--acp-command', () => {
  it('splits words as a shell splits plain words and quotes, running no shell', () => {
    expect(splitCommandLine('gemini --acp')).toEqual(['gemini', '--acp']);
    expect(splitCommandLine(`  node "/my dir/agent.mjs" --name 'a b' x\\ y  `)).toEqual(['node', '/my dir/agent.mjs', '--name', 'a b', 'x y']);
    expect(splitCommandLine(`agent "" $HOME '*'`)).toEqual(['agent', '', '$HOME', '*']);
    expect(() => splitCommandLine('agent "open')).toThrow('a quote (") is not closed');
    expect(() => splitCommandLine('   ')).toThrow(/--acp-command is empty/);
  });

  it('a continue naming another command than the recorded one is stale_handle', async () => {
    const sh = realpathSync('/bin/sh');
    const cli = { path: '/bin/sh', realPath: sh, version: 'unknown', args: ['-c', 'x'] };
    await expect(checkAcpCommand(cli, undefined, {})).resolves.toBeUndefined();
    // The same file by another name is the same command.
    await expect(checkAcpCommand(cli, 'sh -c x', { PATH: '/bin' })).resolves.toBeUndefined();
    const err = await checkAcpCommand(cli, '/bin/sh -c y', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CalError);
    expect(err).toMatchObject({ kind: 'stale_handle', details: { field: 'acpCommand', expected: `${sh} -c x`, actual: `${sh} -c y` } });
  });
});

describe("Gemini CLI's session/load quirk", () => {
  let dir = '';
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("moves a session file named by the current minute to the minute before; older files and other sessions stay", () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'cal-gemini-load-'));
    const chats = path.join(dir, 'tmp', 'work', 'chats');
    mkdirSync(chats, { recursive: true });
    const id = '414338bb-bb00-41f9-8fdc-432201e6669e';
    for (const f of ['session-2026-12-06T08-46-414338bb.jsonl', 'session-2026-12-06T08-40-414338bb.jsonl', 'session-2026-12-06T08-46-0ec1d3d2.jsonl']) writeFileSync(path.join(chats, f), '{}\n');
    const now = Date.parse('2026-12-06T08:46:30Z');
    expect(keepSessionFileFromLoad(dir, id, now)).toEqual(['session-2026-12-06T08-45-414338bb.jsonl']);
    expect(readdirSync(chats).sort()).toEqual(['session-2026-12-06T08-40-414338bb.jsonl', 'session-2026-12-06T08-45-414338bb.jsonl', 'session-2026-12-06T08-46-0ec1d3d2.jsonl']);
    // A minute later nothing is moved: no load from now on writes into a file of 08-45.
    expect(keepSessionFileFromLoad(dir, id, now + 60_000)).toEqual([]);
    // Across an hour.
    writeFileSync(path.join(chats, 'session-2026-12-06T09-00-414338bb.jsonl'), '{}\n');
    expect(keepSessionFileFromLoad(dir, id, Date.parse('2026-12-06T09:00:05Z'))).toEqual(['session-2026-12-06T08-59-414338bb.jsonl']);
  });
});
