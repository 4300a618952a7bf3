import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CalError } from '../../errors.js';
import type { ToolPolicy } from '../../handles/schema.js';
import type { SessionConfig, StructuredRunRequest, StructuredTurnResult } from '../types.js';
import { MAX_ARGV_STRING_BYTES, runNdjson, stderrTail } from '../ndjson-process.js';
import { probeAgy, type AgyFeatures } from './binary.js';
import { AgyStream, conversationFromExitHint } from './stream.js';

/**
 * One turn of Agy on the structured transport (research §E, "Recommendation"):
 *
 *   agy --output-format stream-json [--conversation <id>] [--add-dir <cwd>] [--print-timeout <S>s]
 *       [--model M] [--dangerously-skip-permissions] -p <message>
 *
 * `-p` is a string flag that takes the message (Go's flag package takes the next argument as its
 * value whatever it starts with). The first turn has no `--conversation`: agy picks the id and
 * reports it in `init`. The turn completed only with a `result` whose status is SUCCESS and exit
 * status 0.
 */
/** bypass needs a release with --dangerously-skip-permissions (checked at the turn). */
export const agyToolPolicies: ToolPolicy[] = ['default', 'bypass'];

export function agyArgv(realPath: string, features: AgyFeatures, config: SessionConfig, conversationId: string | null, message: string, timeoutMs: number): string[] {
  if (config.model && !features.model) throw new CalError('cli_unsupported', 'this agy release has no --model flag: start without --model, or update it (agy update)');
  let policy: string[];
  if (config.toolPolicy === 'default') policy = [];
  else if (config.toolPolicy === 'bypass' && features.skipPermissions) policy = ['--dangerously-skip-permissions'];
  else throw new CalError('usage', `agy: tool policy ${config.toolPolicy} has no agy equivalent (known: ${agyToolPolicies.join(', ')})`);
  return [
    realPath,
    '--output-format',
    'stream-json',
    ...(conversationId ? ['--conversation', conversationId] : []),
    // An early build's print mode worked in a scratch folder unless the workspace was added.
    ...(features.addDir ? ['--add-dir', config.cwd] : []),
    // Its own limit (5 m by default) would end a turn cal still waits for: cal's timeout governs.
    ...(features.printTimeout ? ['--print-timeout', `${Math.max(1, Math.ceil(timeoutMs / 1000))}s`] : []),
    ...(config.model ? ['--model', config.model] : []),
    ...policy,
    features.printFlag,
    message,
  ];
}

function refuseConfig(req: StructuredRunRequest): void {
  if (req.config.systemPrompt) {
    throw new CalError('usage', 'agy has no option for a system prompt, and cal writes none into your project: start without --system-prompt');
  }
  if (req.config.mcpConfigPath) {
    throw new CalError('usage', "agy takes MCP servers only from its shared ~/.gemini/config/mcp_config.json, which cal does not write: start without --mcp-config");
  }
  if (Buffer.byteLength(req.message) > MAX_ARGV_STRING_BYTES) {
    throw new CalError('usage', `the message is ${Math.ceil(Buffer.byteLength(req.message) / 1024)} KB; agy takes it in its argv, which holds at most ${Math.floor(MAX_ARGV_STRING_BYTES / 1024)} KB: put it in a file and ask the agent to read it`);
  }
}

/**
 * Where agy keeps a conversation (`~/.gemini/antigravity-cli/`, the 1.1.19 layout in research §E):
 * the append-only step log `brain/<id>/.system_generated/logs/transcript_full.jsonl`, else the
 * conversation database `conversations/<id>.db` (`.pb` before 1.0.4). Recorded for inspect.
 */
export function conversationFile(env: Record<string, string>, id: string): string | null {
  const root = path.join(env.HOME || os.homedir(), '.gemini', 'antigravity-cli');
  for (const file of [
    path.join(root, 'brain', id, '.system_generated', 'logs', 'transcript_full.jsonl'),
    path.join(root, 'conversations', `${id}.db`),
    path.join(root, 'conversations', `${id}.pb`),
  ]) {
    if (existsSync(file)) return file;
  }
  return null;
}

export async function runAgyTurn(req: StructuredRunRequest): Promise<StructuredTurnResult> {
  refuseConfig(req);
  const features = await probeAgy(req.cli, req.env);
  if (req.mode === 'resume' && !req.sessionId) throw new CalError('internal', 'agy resume without a conversation id');
  // The id chosen up front (pendingSessionId) is cal's own: agy cannot be given one.
  const requested = req.mode === 'resume' ? (req.sessionId as string) : null;
  const stream = new AgyStream();
  const report = req.onProgress;
  const run = await runNdjson({
    argv: agyArgv(req.cli.realPath, features, req.config, requested, req.message, req.timeoutMs),
    env: req.env,
    cwd: req.config.cwd,
    timeoutMs: req.timeoutMs,
    ...(req.signal ? { signal: req.signal } : {}),
    onEvent: (value) => {
      stream.feed(value);
      report?.(stream);
    },
  });
  if (run.timedOut) throw new CalError('timeout', `agy gave no result within ${Math.round(req.timeoutMs / 1000)}s`);
  const said = stderrTail(`${run.stderr}\n${run.otherLines.join('\n')}`, req.env);
  const id = stream.conversationId ?? conversationFromExitHint(run.stderr) ?? requested;
  if (requested && id !== requested) {
    throw new CalError('resume_unavailable', `agy ran conversation ${id}, not conversation ${requested} it was told to resume: cal never takes that for the same conversation`);
  }
  const completed = stream.result !== null && (stream.result.status ?? 'SUCCESS') === 'SUCCESS' && !stream.failure && run.exitCode === 0;
  if (!id) {
    // agy named no conversation: it recorded none, so the session stays without a native id.
    throw new CalError('turn_failed', `agy failed before it started a conversation (exit ${run.exitCode ?? 'unknown'})${said ? `: ${said}` : ''}`);
  }
  const base = { sessionId: id, tools: stream.tools, transcriptPath: conversationFile(req.env, id) };
  if (completed) return { ...base, status: 'completed', answer: stream.answer, error: null };
  const why = stream.failure ?? `agy ended${stream.result ? '' : ' without a result event'} with exit status ${run.exitCode ?? 'unknown'}${said ? `: ${said}` : ''}`;
  // How agy ends on a SIGINT is not documented (its own status, or the signal): a turn without
  // its result that cal cancelled, or that a SIGINT ended, was interrupted, as for the other CLIs.
  if (run.signal === 'SIGINT' || req.signal?.aborted) return { ...base, status: 'interrupted', answer: null, error: why };
  return { ...base, status: 'failed', answer: null, error: why };
}
