import { CalError } from '../../errors.js';
import type { ToolPolicy } from '../../handles/schema.js';
import type { SessionConfig, StructuredRunRequest, StructuredTurnResult } from '../types.js';
import { MAX_ARGV_STRING_BYTES, runNdjson, stderrTail } from '../ndjson-process.js';
import { createChat, probeCursor, refusalOf } from './binary.js';
import { chatRecordFile, findChatDir, writePluginDir } from './store.js';
import { CursorStream } from './stream.js';

/**
 * One turn of Cursor CLI on the structured transport (research §D, "Recommendation"):
 *
 *   cursor-agent -p --output-format stream-json --trust --workspace <cwd> --resume <chat id>
 *                [--model M] [--force | --mode plan|ask] [--plugin-dir D --approve-mcps] -- <message>
 *
 * The chat id is minted by `create-chat` before the first turn, so every turn (the first too)
 * resumes a chat whose id cal already holds. The turn completed only with a `result` event that is
 * not `is_error` and exit status 0; anything else is a failure carrying the CLI's own words.
 */

/** cal's tool policies in Cursor's terms (print mode without --force rejects what needs approval). */
const POLICY_FLAGS: Record<string, string[]> = {
  default: [],
  'read-only': ['--mode', 'ask'],
  bypass: ['--force'],
};

export const cursorToolPolicies = Object.keys(POLICY_FLAGS) as ToolPolicy[];

export function cursorArgv(realPath: string, config: SessionConfig, chatId: string, message: string, pluginDir: string | null): string[] {
  const policy = POLICY_FLAGS[config.toolPolicy];
  if (!policy) throw new CalError('usage', `cursor: tool policy ${config.toolPolicy} has no Cursor equivalent (known: ${Object.keys(POLICY_FLAGS).join(', ')})`);
  return [
    realPath,
    '-p',
    '--output-format',
    'stream-json',
    // The trust policy (engine/folder-trust.ts): without it, cursor-agent refuses an untrusted folder itself.
    ...(config.trustWorkingDir !== false ? ['--trust'] : []),
    '--workspace',
    config.cwd,
    '--resume',
    chatId,
    ...(config.model ? ['--model', config.model] : []),
    ...policy,
    ...(pluginDir ? ['--plugin-dir', pluginDir, '--approve-mcps'] : []),
    // `--` keeps a message that starts with '-' from being read as a flag.
    '--',
    message,
  ];
}

/** What Cursor has no option for, refused before anything runs. */
function refuseConfig(req: StructuredRunRequest): void {
  if (req.config.systemPrompt) {
    throw new CalError('usage', 'cursor-agent has no option for a system prompt, and cal writes none into your project (.cursor/rules, AGENTS.md): start without --system-prompt');
  }
  if (Buffer.byteLength(req.message) > MAX_ARGV_STRING_BYTES) {
    throw new CalError('usage', `the message is ${Math.ceil(Buffer.byteLength(req.message) / 1024)} KB; cursor-agent takes it in its argv, which holds at most ${Math.floor(MAX_ARGV_STRING_BYTES / 1024)} KB: put it in a file and ask the agent to read it`);
  }
}

export async function runCursorTurn(req: StructuredRunRequest): Promise<StructuredTurnResult> {
  refuseConfig(req);
  const cwd = req.config.cwd;
  const env = req.env;
  const features = await probeCursor(req.cli, env);
  let pluginDir: string | null = null;
  if (req.config.mcpConfigPath) {
    if (!features.pluginDir || !features.approveMcps) {
      throw new CalError('cli_unsupported', `cursor-agent ${req.cli.version} lacks --plugin-dir or --approve-mcps, through which cal gives one launch its MCP servers without writing your mcp.json; update it`);
    }
    if (!req.sessionDir) throw new CalError('internal', 'a Cursor launch with an MCP config needs the session folder');
    pluginDir = await writePluginDir(req.sessionDir, req.config.mcpConfigPath);
  }
  let chatId: string;
  if (req.mode === 'resume') {
    if (!req.sessionId) throw new CalError('internal', 'cursor resume without a chat id');
    chatId = req.sessionId;
    // A chat whose store is gone would not be this conversation any more: never send into it.
    if (!findChatDir(env, cwd, chatId)) {
      throw new CalError(
        'resume_unavailable',
        `Cursor's store of chat ${chatId} for ${cwd} is gone (looked under chats/<md5 of the folder>/ in ${env.CURSOR_CONFIG_DIR ? 'CURSOR_CONFIG_DIR' : '~/.cursor and $XDG_CONFIG_HOME/cursor'}): it was deleted, or CURSOR_CONFIG_DIR changed since the session started`,
      );
    }
  } else {
    chatId = await createChat(req.cli, env, cwd, req.config.trustWorkingDir !== false);
  }

  const stream = new CursorStream();
  const report = req.onProgress;
  const run = await runNdjson({
    argv: cursorArgv(req.cli.realPath, req.config, chatId, req.message, pluginDir),
    env,
    cwd,
    timeoutMs: req.timeoutMs,
    ...(req.signal ? { signal: req.signal } : {}),
    onEvent: (value) => {
      stream.feed(value);
      report?.(stream);
    },
  });
  if (run.timedOut) throw new CalError('timeout', `cursor-agent gave no result within ${Math.round(req.timeoutMs / 1000)}s`);

  const said = stderrTail(`${run.stderr}\n${run.otherLines.join('\n')}`, env);
  const completed = stream.result !== null && !stream.result.is_error && run.exitCode === 0;
  if (!completed) {
    const refusal = refusalOf(said, cwd, req.config.trustWorkingDir !== false);
    if (refusal) throw refusal;
  }
  if (stream.sessionId && stream.sessionId !== chatId) {
    throw new CalError(
      req.mode === 'resume' ? 'resume_unavailable' : 'cli_unsupported',
      `cursor-agent answered in chat ${stream.sessionId}, not in chat ${chatId} it was told to resume: cal never takes that for the same conversation`,
    );
  }
  const chatDir = findChatDir(env, cwd, chatId);
  const base = { sessionId: chatId, tools: stream.tools, transcriptPath: chatDir ? chatRecordFile(chatDir) : null };
  if (completed) return { ...base, status: 'completed', answer: stream.answer, error: null };

  const why = failureText(stream, run.exitCode, said);
  // How cursor-agent ends on a SIGINT is not documented (its own status, or the signal): a turn without
  // its result that cal cancelled, or that a SIGINT ended, was interrupted, as for the other CLIs.
  if (run.signal === 'SIGINT' || req.signal?.aborted) return { ...base, status: 'interrupted', answer: null, error: why };
  // Nothing of the chat on disk: the CLI recorded no turn, so the session stays without a native
  // id and the next turn starts it afresh (it is not a silent restart of a conversation).
  if (!chatDir) throw new CalError('turn_failed', `cursor-agent failed before it recorded anything of the chat: ${why}`);
  return { ...base, status: 'failed', answer: null, error: why };
}

function failureText(stream: CursorStream, exitCode: number | undefined, said: string): string {
  if (stream.result?.is_error) return stream.result.result || said || `cursor-agent reported an error result (exit ${exitCode})`;
  const missing = stream.result ? '' : ' without a result event';
  return `cursor-agent ended${missing} with exit status ${exitCode ?? 'unknown'}${said ? `: ${said}` : ''}`;
}
