/**
 * The scripted model's reply logic. It keeps no state: the answer is a pure function of the
 * dialect-neutral request (its history, its last user message and the directives in it).
 */
import { parseDirectives, type Directive } from './directives.js';
import { firstOutputLine, synthesizeFromSchema } from './text.js';
import type { ConversationItem, ParsedModelRequest, ReplyPlan, ToolIntent } from './types.js';

/** Default number of text deltas a streamed answer is split into. */
export const DEFAULT_CHUNKS = 3;

/** The answer of a title request (Claude, Codex) or a plain-text utility request (Gemini). */
export const SIDE_TITLE = 'Scripted model session';

const REMEMBER_RE = /\bremember\s+(?:the\s+)?code\s?word[\s:=]+([A-Za-z0-9]+)/i;
const RECALL_RE = /\bwhat\s+(?:was|is)\s+(?:the|my|our)\s+code\s?word\b/i;
const CODEWORD_RE = /\bcode\s?word[\s:=]+(?:(?:is|was)\s+)?([A-Za-z0-9]+)/i;

/** The codeword named in a user message, or null (a recall question names none). */
export function codewordIn(text: string): string | null {
  if (RECALL_RE.test(text)) return null;
  const remembered = REMEMBER_RE.exec(text);
  if (remembered?.[1]) return remembered[1];
  return CODEWORD_RE.exec(text)?.[1] ?? null;
}

/** The deterministic answer to a plain message (no content directive). */
export function conversationalAnswer(message: string, earlierUserMessages: string[]): string {
  if (RECALL_RE.test(message)) {
    for (let i = earlierUserMessages.length - 1; i >= 0; i--) {
      const word = codewordIn(earlierUserMessages[i] ?? '');
      if (word) return `The codeword was ${word}.`;
    }
    return 'I do not know the codeword.';
  }
  const remember = REMEMBER_RE.exec(message);
  if (remember?.[1]) return `OK, I will remember the codeword ${remember[1]}.`;
  const flat = message.replace(/\s+/g, ' ').trim();
  if (flat === '') return 'Received an empty message.';
  return `Received: ${Array.from(flat).slice(0, 60).join('')}`;
}

/** The deterministic text of `[[cal:lines=N]]`. */
export function numberedLines(n: number): string {
  const lines: string[] = [];
  for (let i = 1; i <= n; i++) lines.push(`${i}/${n} ünïcödé ✓ 日本語 — “quotes” & <tags> 🚀`);
  return lines.join('\n');
}

function sideAnswer(req: ParsedModelRequest): string {
  if (req.side === 'json') return JSON.stringify(synthesizeFromSchema(req.jsonSchema) ?? {});
  // Claude Code asks for its title as structured output: {"title": "…"}.
  if (req.side === 'title' && req.jsonSchema !== undefined) return JSON.stringify(synthesizeFromSchema(req.jsonSchema, SIDE_TITLE) ?? {});
  // Titles and plain-text utility calls (Gemini session summaries) get the same short title.
  return SIDE_TITLE;
}

function basePlan(userMessages: string[]): ReplyPlan {
  return {
    status: 200,
    errorMessage: '',
    retryable: false,
    text: '',
    tool: null,
    mode: 'normal',
    delayMs: 0,
    chunkDelayMs: 0,
    chunks: DEFAULT_CHUNKS,
    directives: [],
    userMessages,
    lastUserMessage: userMessages.length > 0 ? (userMessages[userMessages.length - 1] ?? null) : null,
  };
}

function errorMessageFor(status: number): string {
  if (status === 429) return 'Mock rate limit exceeded';
  if (status === 529) return 'Mock overloaded';
  if (status === 503) return 'Mock service unavailable';
  if (status >= 500) return 'Mock internal server error';
  return `Mock error ${status}`;
}

/** Decide the reply to a parsed request. */
export function planReply(req: ParsedModelRequest): ReplyPlan {
  const items = req.items;
  const userMessages = items.filter((i): i is Extract<ConversationItem, { kind: 'user' }> => i.kind === 'user').map((i) => i.text);
  const plan = basePlan(userMessages);
  if (req.side) {
    plan.text = sideAnswer(req);
    return plan;
  }
  let lastUserIdx = -1;
  for (let i = items.length - 1; i >= 0; i--) {
    if (items[i]?.kind === 'user') {
      lastUserIdx = i;
      break;
    }
  }
  const last = plan.lastUserMessage;
  if (last === null) {
    plan.text = 'Hello from the scripted model.';
    return plan;
  }
  const parsed = parseDirectives(last);
  plan.directives = parsed.raw;
  const after = items.slice(lastUserIdx + 1);
  const results = after.filter((i): i is Extract<ConversationItem, { kind: 'tool_result' }> => i.kind === 'tool_result');

  let content: Directive | null = null;
  const tools: ToolIntent[] = [];
  const invalid: string[] = [];
  for (const d of parsed.directives) {
    switch (d.kind) {
      case 'http':
        plan.status = d.status;
        plan.errorMessage = errorMessageFor(d.status);
        break;
      case 'retryable':
        plan.retryable = true;
        break;
      case 'delay':
        plan.delayMs = d.ms;
        break;
      case 'chunk-delay':
        plan.chunkDelayMs = d.ms;
        break;
      case 'chunks':
        plan.chunks = d.n;
        break;
      case 'break':
        plan.mode = 'break';
        break;
      case 'fail':
        plan.mode = 'fail';
        break;
      case 'shell':
        tools.push({ type: 'shell', command: d.command });
        break;
      case 'mcp':
        tools.push({ type: 'mcp', server: d.server, tool: d.tool, args: d.args });
        break;
      case 'echo':
      case 'reply':
      case 'lines':
        content ??= d;
        break;
      case 'invalid':
        invalid.push(d.reason);
        break;
    }
  }

  if (invalid.length > 0) {
    plan.text = `Invalid cal directive: ${invalid.join('; ')}`;
    return plan;
  }
  if (tools.length > 0) {
    // Several tool directives run one after another: one call per request, counted by the tool
    // results the history already holds after the last user message.
    const next = tools[results.length];
    const lastResult = results[results.length - 1];
    if (next) plan.tool = next;
    else if (lastResult) plan.text = `${lastResult.isError ? 'Tool failed' : 'Tool finished'}: ${firstOutputLine(lastResult.output)}`;
    return plan;
  }
  const c = content as Directive | null;
  if (c?.kind === 'reply') plan.text = c.text;
  else if (c?.kind === 'lines') plan.text = numberedLines(c.n);
  else if (c?.kind === 'echo') plan.text = parsed.stripped;
  else plan.text = conversationalAnswer(parsed.stripped, userMessages.slice(0, -1));
  return plan;
}

/** A one-line summary of a plan for the request log. */
export function replySummary(plan: ReplyPlan, toolName: string | null): string | null {
  if (plan.status !== 200) return null;
  if (plan.tool) {
    const what = plan.tool.type === 'shell' ? plan.tool.command : `${plan.tool.server}.${plan.tool.tool} ${JSON.stringify(plan.tool.args)}`;
    return `[tool call ${toolName ?? plan.tool.type}] ${what}`;
  }
  return plan.text;
}
