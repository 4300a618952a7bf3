/** Text helpers shared by the dialects and the reply logic. */
import { createHash } from 'node:crypto';
import { unwrapJsonResult } from '../util/json-tool-result.js';

/**
 * Prefixes of text blocks that a CLI injects into user messages and that are not the user's own
 * words: Claude system reminders and slash-command wrappers, Codex environment/instruction blocks,
 * Gemini's session context, Kilo Code's `<environment_details>` (a clock and folders, a text part of its own).
 */
const INJECTED_PREFIXES = [
  '<system-reminder>',
  '<environment_context>',
  '<environment_details>',
  '<session_context>',
  '<user_instructions>',
  '<turn_aborted>',
  '<permissions instructions>',
  '<skills_instructions>',
  '<local-command-caveat>',
  '<local-command-stdout>',
  '<command-name>',
  '<command-message>',
  '# AGENTS.md instructions',
  '[Request interrupted by user',
];

/** True when a text block was injected by the CLI rather than typed by the user. */
export function isInjectedText(text: string): boolean {
  const t = text.trimStart();
  return INJECTED_PREFIXES.some((p) => t.startsWith(p));
}

/**
 * The clock GitHub Copilot CLI puts before every user message it sends
 * (`<current_datetime>…</current_datetime>` and a blank line): it is not the user's words, and a
 * directive or an echo must see the message as typed.
 */
const COPILOT_DATETIME_PREFIX = /^<current_datetime>[^<]*<\/current_datetime>\n*/;

/**
 * The user's own text of one block: null for an injected block; otherwise the text with any
 * leading `<current_datetime>` clock and embedded `<system-reminder>…</system-reminder>` sections
 * removed.
 */
export function userOwnText(text: string): string | null {
  const own = text.replace(COPILOT_DATETIME_PREFIX, '');
  if (own !== text && own.trim() === '') return null;
  if (isInjectedText(own)) return null;
  if (!own.includes('<system-reminder>')) return own;
  const cleaned = own.replace(/<system-reminder>[\s\S]*?<\/system-reminder>/g, '').trim();
  return cleaned === '' ? null : cleaned;
}

/** Split text into at most `n` pieces of roughly equal length without cutting a code point. */
export function splitText(text: string, n: number): string[] {
  const cps = Array.from(text);
  const parts = Math.max(1, Math.min(n, cps.length));
  if (cps.length === 0) return [''];
  const out: string[] = [];
  for (let i = 0; i < parts; i++) {
    const a = Math.floor((i * cps.length) / parts);
    const b = Math.floor(((i + 1) * cps.length) / parts);
    out.push(cps.slice(a, b).join(''));
  }
  return out;
}

/** A short deterministic hex id derived from the given values. */
export function hashId(...values: unknown[]): string {
  return createHash('sha256').update(JSON.stringify(values)).digest('hex').slice(0, 24);
}

/** A deterministic token estimate (4 characters a token, at least 1). */
export function estimateTokens(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}

/**
 * The first meaningful line of a tool's output. CLIs wrap command output in a report
 * ("Chunk ID: …\nOutput:\nhi" for Codex, "Command: …\nOutput: hi" for Gemini), so the text after
 * the last `Output:` label is used when there is one. Gemini also wraps every tool result, MCP
 * results too, in `<untrusted_context>` lines, which are not output.
 */
export function firstOutputLine(output: string): string {
  let s = unwrapJsonResult(output);
  const re = /(^|\n)Output:[ \t]*/g;
  let last = -1;
  for (let m = re.exec(s); m; m = re.exec(s)) last = m.index + m[0].length;
  if (last >= 0) s = s.slice(last);
  const line = s.split(/\r?\n/).map((l) => l.trim()).find((l) => l !== '' && !/^<\/?untrusted_context>$/.test(l)) ?? '';
  if (line === '') return '(no output)';
  const cps = Array.from(line);
  return cps.length > 200 ? cps.slice(0, 200).join('') : line;
}

/** One SSE frame with an `event:` line (Anthropic, Responses). */
export function sseEvent(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** One SSE frame with only a `data:` line (Chat Completions). */
export function sseData(data: unknown): string {
  return `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
}

/**
 * A deterministic value that satisfies a JSON schema well enough for the CLIs' utility calls
 * (Gemini router, next-speaker check). Enums prefer "user" and "flash" so that a next-speaker check
 * hands the turn back and a router picks the cheap model.
 */
export function synthesizeFromSchema(schema: unknown, text = 'scripted', depth = 0): unknown {
  if (depth > 8 || schema === null || typeof schema !== 'object') return null;
  const s = schema as Record<string, unknown>;
  const enumValues = Array.isArray(s.enum) ? s.enum : null;
  if (enumValues && enumValues.length > 0) {
    for (const pref of ['user', 'flash']) if (enumValues.includes(pref)) return pref;
    return enumValues[0];
  }
  const rawType = s.type;
  const type = (Array.isArray(rawType) ? rawType[0] : rawType)?.toString().toLowerCase();
  if (type === 'object' || (type === undefined && s.properties)) {
    const out: Record<string, unknown> = {};
    const props = (s.properties ?? {}) as Record<string, unknown>;
    for (const [key, sub] of Object.entries(props)) out[key] = synthesizeFromSchema(sub, text, depth + 1);
    return out;
  }
  if (type === 'array') return [];
  if (type === 'string') return text;
  if (type === 'integer' || type === 'number') {
    const min = typeof s.minimum === 'number' ? s.minimum : 1;
    return min;
  }
  if (type === 'boolean') return false;
  return null;
}
