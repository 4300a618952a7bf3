import { z } from '../../util/zod.js';
import type { ToolActivity } from '../../handles/tool-activity.js';

/**
 * Claude Code's session transcript (`~/.claude/projects/<slug>/<id>.jsonl`), measured on 2.1.328
 * and on the older releases of the version matrix (docs/certify.md). Only the fields cal relies
 * on are parsed; everything else is passed over.
 */
export const TextBlock = z.object({ type: z.literal('text'), text: z.string() });
export const ToolUseBlock = z.object({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: z.unknown() });
export const ToolResultBlock = z.object({
  type: z.literal('tool_result'),
  tool_use_id: z.string(),
  content: z.union([z.string(), z.array(z.object({ type: z.string(), text: z.string().optional() }).passthrough())]).optional(),
  is_error: z.boolean().optional(),
});
const ContentBlock = z.union([TextBlock, ToolUseBlock, ToolResultBlock, z.object({ type: z.string() }).passthrough()]);

const UserRecord = z.object({
  type: z.literal('user'),
  /** Absent before a release between 2.1.42 and 2.1.145 (measured absent on 2.1.29). */
  promptId: z.string().optional(),
  uuid: z.string().optional(),
  /** The record this one follows in the conversation (null for the first). */
  parentUuid: z.string().nullable().optional(),
  sessionId: z.string().optional(),
  timestamp: z.string().optional(),
  /** The release that wrote the record. */
  version: z.string().optional(),
  isMeta: z.boolean().optional(),
  isCompactSummary: z.boolean().optional(),
  origin: z.object({ kind: z.string() }).passthrough().optional(),
  /** Set on a record the CLI injected for a tool (a skill's prose after the Skill tool): never a prompt. */
  sourceToolUseID: z.string().optional(),
  message: z.object({ role: z.literal('user'), content: z.union([z.string(), z.array(ContentBlock)]) }),
});

const AssistantRecord = z.object({
  type: z.literal('assistant'),
  isApiErrorMessage: z.boolean().optional(),
  message: z.object({
    id: z.string().optional(),
    content: z.array(ContentBlock),
    stop_reason: z.string().nullable().optional(),
  }),
});

const SystemRecord = z.object({
  type: z.literal('system'),
  subtype: z.string().optional(),
  /** `informational` records: the text shown in the pane (a blocked prompt's hook message). */
  content: z.unknown().optional(),
  /** 2.1.332: why a prompt never became a turn (`blocked_by_hook` and the hook's reason). */
  promptSubmitEnding: z
    .object({ ending: z.object({ kind: z.string().optional(), reason: z.string().optional() }).passthrough().optional() })
    .passthrough()
    .optional(),
});

/**
 * A hook that stopped the turn (`"continue": false` from PreToolUse, PostToolUse, …; measured on
 * 2.1.328 with a PreToolUse hook on Write): an `attachment` record naming the hook and its
 * `stopReason`, then `turn_duration` with no reply after the tool. `claude -p` reports the same
 * turn with `terminal_reason: "hook_stopped"`.
 */
const HookStoppedRecord = z.object({
  type: z.literal('attachment'),
  attachment: z.object({ type: z.literal('hook_stopped_continuation'), message: z.string().optional(), hookName: z.string().optional() }).passthrough(),
});

const KnownOther = z.object({
  type: z.enum([
    'mode', 'permission-mode', 'atis-latch', 'file-history-snapshot', 'attachment', 'api-request-shape',
    'api-request-blob', 'api-request', 'tools-used', 'last-prompt', 'queue-operation', 'summary',
    'custom-title', 'agent-name', 'tag', 'pr-link', 'progress',
  ]),
});

/**
 * The session's running cost, written as a process leaves the session (measured on 2.1.328: last
 * record of every `claude -p` run, and of a TUI that exits; a resumed TUI writes one before its
 * first prompt too). Print mode writes no `turn_duration`: after our message this is its end.
 */
const CostStateRecord = z.object({ type: z.literal('cost-state') });

export type UserRecord = z.infer<typeof UserRecord>;
export type AssistantRecord = z.infer<typeof AssistantRecord>;
export type SystemRecord = z.infer<typeof SystemRecord>;

export type ClaudeRecord =
  | { kind: 'user'; record: z.infer<typeof UserRecord> }
  | { kind: 'assistant'; record: z.infer<typeof AssistantRecord> }
  | { kind: 'system'; record: z.infer<typeof SystemRecord> }
  | { kind: 'processEnd' }
  | { kind: 'hookStopped'; hook: string; reason: string }
  | { kind: 'other' }
  | { kind: 'unknown' };

export type KnownClaudeRecord = Exclude<ClaudeRecord, { kind: 'unknown' }>;

/** A subagent's record: releases before 2.1 write them into the session's own file (`Warmup`). */
const Sidechain = z.object({ isSidechain: z.literal(true) });

export function classifyRecord(value: unknown): ClaudeRecord {
  if (Sidechain.safeParse(value).success) return { kind: 'other' };
  const user = UserRecord.safeParse(value);
  if (user.success) return { kind: 'user', record: user.data };
  const assistant = AssistantRecord.safeParse(value);
  if (assistant.success) return { kind: 'assistant', record: assistant.data };
  const system = SystemRecord.safeParse(value);
  if (system.success) return { kind: 'system', record: system.data };
  if (CostStateRecord.safeParse(value).success) return { kind: 'processEnd' };
  const stopped = HookStoppedRecord.safeParse(value);
  if (stopped.success) return { kind: 'hookStopped', hook: stopped.data.attachment.hookName ?? 'a hook', reason: stopped.data.attachment.message ?? 'no reason given' };
  if (KnownOther.safeParse(value).success) return { kind: 'other' };
  return { kind: 'unknown' };
}

/** The user's own text of a user record (string content or text blocks), or null for tool results. */
export function userText(record: z.infer<typeof UserRecord>): string | null {
  const content = record.message.content;
  if (typeof content === 'string') return content;
  const texts: string[] = [];
  for (const block of content) {
    if (block.type === 'tool_result') return null;
    if (block.type === 'text' && 'text' in block && typeof block.text === 'string') texts.push(block.text);
  }
  return texts.length ? texts.join('\n') : null;
}

export const INTERRUPT_PREFIX = '[Request interrupted by user';

/**
 * Text as Claude Code stores what it was given: line endings and U+2028 as LF, a tab as four
 * spaces (its input box), and without the invisible format characters it strips (measured on
 * 2.1.328: U+200B, U+2060, U+FEFF, U+202E, U+00AD are gone from the stored prompt). Both sides
 * of a match go through this, so a message containing them still finds its own record.
 */
export function normaliseForMatch(text: string): string {
  return text
    .replace(/\r\n?|\u2028/g, '\n')
    .replace(/\t/g, '    ')
    .replace(/[\p{Default_Ignorable_Code_Point}\p{Cf}]/gu, '')
    .trim();
}

export function toolFromUse(block: z.infer<typeof ToolUseBlock>): ToolActivity {
  const mcp = /^mcp__(.+?)__(.+)$/.exec(block.name);
  if (mcp) return { kind: 'mcp', server: mcp[1], name: mcp[2] ?? block.name, input: block.input };
  if (block.name === 'Bash') {
    const command = (block.input as { command?: unknown } | null)?.command;
    return { kind: 'shell', name: typeof command === 'string' ? command : 'Bash', input: block.input };
  }
  return { kind: 'tool', name: block.name, input: block.input };
}

export function resultText(block: z.infer<typeof ToolResultBlock>): string {
  if (typeof block.content === 'string') return block.content;
  return (block.content ?? []).map((c) => c.text ?? '').join('');
}

/**
 * A prompt a UserPromptSubmit hook blocked (exit 2, or `"decision": "block"`): it never becomes a
 * user record; only a `system/informational` record says so, naming the prompt (measured on
 * 2.0.76 and 2.1.332): "UserPromptSubmit operation blocked by hook:\n[<command>]: <reason>\n\n
 * Original prompt: <text>". 2.1.332 also gives the reason in `promptSubmitEnding`.
 */
export function blockedPrompt(record: SystemRecord): { prompt: string; reason: string } | null {
  if (record.subtype !== 'informational' || typeof record.content !== 'string') return null;
  const m = /^UserPromptSubmit operation blocked by hook:\n([\s\S]*?)\n\nOriginal prompt: ([\s\S]*)$/.exec(record.content);
  if (!m) return null;
  let reason = record.promptSubmitEnding?.ending?.reason ?? (m[1] ?? '');
  // Older releases name the hook command first: "[<command>]: <reason>".
  if (!record.promptSubmitEnding?.ending?.reason && reason.startsWith('[')) {
    const cut = reason.indexOf(']: ');
    if (cut >= 0) reason = reason.slice(cut + 3);
  }
  return { prompt: m[2] ?? '', reason: reason.trim() || 'no reason given' };
}

/**
 * A prompt a UserPromptSubmit hook stopped (`"continue": false`): the prompt is recorded, then a
 * user record "Operation stopped by hook: <stopReason>" (meta with the prompt's promptId on
 * 2.1.332, a plain user record on 2.0.76), and no model call.
 */
export const STOPPED_BY_HOOK_PREFIX = 'Operation stopped by hook';

/**
 * A Stop hook (the user's own) that made Claude go on: a meta user record "Stop hook feedback:
 * …" is written when that hook finishes, before `stop_hook_summary` (measured on 2.0.76 and
 * 2.1.332); the turn continues with another model call and ends on a later Stop.
 */
export const STOP_HOOK_FEEDBACK_PREFIX = 'Stop hook feedback:';
