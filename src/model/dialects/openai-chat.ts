/** OpenAI Chat Completions (`POST /v1/chat/completions`), as used by Pi, Qwen Code and OpenCode. */
import { sseData, splitText, userOwnText } from '../text.js';
import { resolveWith } from '../tools.js';
import {
  RequestError,
  type ConversationItem,
  type DialectModule,
  type Frame,
  type HttpRequestInfo,
  type OfferedTool,
  type ParsedModelRequest,
  type RenderInput,
  type SideKind,
} from '../types.js';
import { openAiError } from './openai-responses.js';

type Json = Record<string, unknown>;

function isObj(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function header(headers: HttpRequestInfo['headers'], name: string): string | null {
  const v = headers[name];
  return typeof v === 'string' ? v : Array.isArray(v) ? (v[0] ?? null) : null;
}

function texts(content: unknown): string[] {
  if (typeof content === 'string') return [content];
  if (!Array.isArray(content)) return [];
  return content.filter(isObj).flatMap((p) => (typeof p.text === 'string' ? [p.text] : []));
}

function parseMessages(messages: unknown[]): { items: ConversationItem[]; chars: number; lastUserText: string } {
  const items: ConversationItem[] = [];
  let chars = 0;
  let lastUserText = '';
  for (const m of messages) {
    if (!isObj(m)) throw new RequestError(400, 'messages: each message must be an object');
    const role = m.role;
    const parts = texts(m.content);
    for (const t of parts) chars += t.length;
    if (role === 'user') {
      // Qwen Code sends one user message of several text parts: its `<system-reminder>` blocks
      // first, the prompt last (measured on 0.24.4). Each part is its own block here.
      lastUserText = parts.at(-1) ?? '';
      for (const t of parts) {
        const own = userOwnText(t);
        if (own !== null) items.push({ kind: 'user', text: own });
      }
    } else if (role === 'assistant') {
      for (const t of parts) if (t !== '') items.push({ kind: 'assistant', text: t });
      if (Array.isArray(m.tool_calls)) {
        for (const c of m.tool_calls) {
          if (!isObj(c)) continue;
          const fn = isObj(c.function) ? c.function : {};
          items.push({ kind: 'tool_call', id: String(c.id ?? ''), name: String(fn.name ?? '') });
        }
      }
    } else if (role === 'tool' || role === 'function') {
      items.push({ kind: 'tool_result', id: String(m.tool_call_id ?? m.name ?? ''), output: parts.join('\n'), isError: false });
    }
  }
  return { items, chars, lastUserText };
}

/**
 * Requests a CLI sends on its own after a turn, which are not the user's turn (answered with a
 * short text, logged as side requests): Qwen Code's memory extraction, sent after every turn,
 * and its TUI's next-prompt suggestion (measured on 0.24.4).
 */
const SIDE_PROMPTS = [/^\s*Managed memory has TWO directories\b/, /^\s*\[SUGGESTION MODE:/];

function sideKind(lastUserText: string): SideKind | null {
  return SIDE_PROMPTS.some((re) => re.test(lastUserText)) ? 'utility' : null;
}

function parseTools(tools: unknown): OfferedTool[] {
  if (!Array.isArray(tools)) return [];
  return tools.filter(isObj).flatMap((t) => {
    const fn = isObj(t.function) ? t.function : t;
    return typeof fn.name === 'string' ? [{ name: fn.name, parameters: fn.parameters }] : [];
  });
}

/**
 * OpenCode's title request (measured on 1.18.33): on a session's first turn it asks, with no
 * tools, "Generate a title for this conversation:" as one user message and the user's prompt as
 * the next. A side request, never the user's turn (its prompt is already in that turn's request).
 */
function isTitleRequest(items: ConversationItem[], tools: OfferedTool[]): boolean {
  if (tools.length > 0) return false;
  return items.some((i) => i.kind === 'user' && /^\s*generate a title for this conversation\b/i.test(i.text));
}

export const openaiChat: DialectModule = {
  dialect: 'openai-chat',

  parse(body: unknown, http: HttpRequestInfo): ParsedModelRequest {
    if (!isObj(body)) throw new RequestError(400, 'request body must be a JSON object');
    if (!Array.isArray(body.messages)) throw new RequestError(400, "Missing required parameter: 'messages'.");
    const { items, chars, lastUserText } = parseMessages(body.messages);
    const streamOptions = isObj(body.stream_options) ? body.stream_options : {};
    const format = isObj(body.response_format) ? body.response_format : null;
    const req: ParsedModelRequest = {
      dialect: 'openai-chat',
      model: typeof body.model === 'string' ? body.model : 'scripted-model',
      stream: body.stream === true,
      items,
      tools: parseTools(body.tools),
      sessionKey:
        header(http.headers, 'session_id') ??
        header(http.headers, 'session-id') ??
        header(http.headers, 'x-session-id') ??
        (typeof body.prompt_cache_key === 'string' ? body.prompt_cache_key : null),
      side: sideKind(lastUserText),
      inputChars: chars,
      includeUsage: streamOptions.include_usage === true,
    };
    if (isTitleRequest(items, req.tools)) req.side = 'title';
    if (format && (format.type === 'json_schema' || format.type === 'json_object')) {
      req.side = 'json';
      req.jsonSchema = isObj(format.json_schema) ? format.json_schema.schema : undefined;
    }
    return req;
  },

  errorResponse: openAiError,

  resolveTool(intent, tools, id) {
    return resolveWith(intent, tools, id, {
      shellNames: ['bash', 'shell', 'exec_command', 'run_shell_command', 'run_commands'],
      shellKey: 'command',
      shellDescription: false,
      mcpDefault: (s, t) => ({ name: `mcp__${s}__${t}` }),
    });
  },

  renderJson({ req, plan, call, id, inputTokens, outputTokens }: RenderInput): unknown {
    const message: Json = { role: 'assistant', content: call ? null : plan.text };
    if (call) {
      message.tool_calls = [{ id: call.id, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.args) } }];
    }
    return {
      id: `chatcmpl-${id}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: req.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: call ? 'tool_calls' : 'stop' }],
      usage: { prompt_tokens: inputTokens, completion_tokens: outputTokens, total_tokens: inputTokens + outputTokens },
    };
  },

  renderStream({ req, plan, call, id, inputTokens, outputTokens }: RenderInput) {
    const created = Math.floor(Date.now() / 1000);
    const chunk = (choices: unknown[], extra: Json = {}): string =>
      sseData({ id: `chatcmpl-${id}`, object: 'chat.completion.chunk', created, model: req.model, choices, ...extra });
    const frames: Frame[] = [];
    let pieces: string[];
    if (call) {
      frames.push({
        data: chunk([
          {
            index: 0,
            delta: { role: 'assistant', content: null, tool_calls: [{ index: 0, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] },
            finish_reason: null,
          },
        ]),
      });
      pieces = splitText(JSON.stringify(call.args), plan.chunks);
      pieces.forEach((p, i) =>
        frames.push({ data: chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: p } }] }, finish_reason: null }]), paced: i > 0 }),
      );
    } else {
      frames.push({ data: chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]) });
      pieces = splitText(plan.text, plan.chunks);
      pieces.forEach((p, i) => frames.push({ data: chunk([{ index: 0, delta: { content: p }, finish_reason: null }]), paced: i > 0 }));
    }
    const half = 1 + Math.max(1, Math.floor(pieces.length / 2));
    if (plan.mode === 'fail') {
      frames.length = half;
      frames.push({ data: sseData({ error: { message: 'Mock stream failure', type: 'server_error', param: null, code: null } }), paced: true });
      return { frames, breakAfter: frames.length };
    }
    frames.push({ data: chunk([{ index: 0, delta: {}, finish_reason: call ? 'tool_calls' : 'stop' }]) });
    if (req.includeUsage) {
      frames.push({
        data: chunk([], { usage: { prompt_tokens: inputTokens, completion_tokens: outputTokens, total_tokens: inputTokens + outputTokens } }),
      });
    }
    frames.push({ data: sseData('[DONE]') });
    return { frames, breakAfter: half };
  },
};
