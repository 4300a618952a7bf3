/** Anthropic Messages API (`POST /v1/messages`), as used by Claude Code. */
import { estimateTokens, sseEvent, splitText, userOwnText } from '../text.js';
import { resolveWith } from '../tools.js';
import {
  RequestError,
  type ConversationItem,
  type DialectModule,
  type ErrorResponse,
  type Frame,
  type HttpRequestInfo,
  type OfferedTool,
  type ParsedModelRequest,
  type RenderInput,
  type SideKind,
} from '../types.js';

type Json = Record<string, unknown>;

function isObj(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 504:
      return 'timeout_error';
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

function toolResultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((b) => (isObj(b) && typeof b.text === 'string' ? b.text : ''))
      .filter((t) => t !== '')
      .join('\n');
  }
  return '';
}

/** The session id inside Claude Code's `metadata.user_id` (a JSON string in 2.x, `…_session_<uuid>` before). */
export function claudeSessionKey(body: Json, headers: HttpRequestInfo['headers']): string | null {
  const meta = body.metadata;
  const userId = isObj(meta) && typeof meta.user_id === 'string' ? meta.user_id : null;
  if (userId) {
    try {
      const parsed: unknown = JSON.parse(userId);
      if (isObj(parsed) && typeof parsed.session_id === 'string') return parsed.session_id;
    } catch {
      // not JSON: older format
    }
    const m = /session_([0-9a-fA-F-]{36})/.exec(userId);
    if (m?.[1]) return m[1];
  }
  const h = headers['x-claude-code-session-id'];
  return typeof h === 'string' ? h : null;
}

function parseItems(messages: unknown[]): { items: ConversationItem[]; chars: number; lastRawUserText: string } {
  const items: ConversationItem[] = [];
  let chars = 0;
  let lastRawUserText = '';
  for (const m of messages) {
    if (!isObj(m)) throw new RequestError(400, 'messages: each message must be an object');
    const role = m.role;
    const content = m.content;
    const blocks: unknown[] = typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? content : [];
    for (const b of blocks) {
      if (!isObj(b)) continue;
      if (b.type === 'text' && typeof b.text === 'string') {
        chars += b.text.length;
        if (role === 'user') {
          lastRawUserText = b.text;
          const own = userOwnText(b.text);
          if (own !== null) items.push({ kind: 'user', text: own });
        } else if (role === 'assistant') {
          items.push({ kind: 'assistant', text: b.text });
        }
      } else if (b.type === 'tool_use' && role === 'assistant') {
        items.push({ kind: 'tool_call', id: String(b.id ?? ''), name: String(b.name ?? '') });
      } else if (b.type === 'tool_result' && role === 'user') {
        const output = toolResultText(b.content);
        chars += output.length;
        items.push({ kind: 'tool_result', id: String(b.tool_use_id ?? ''), output, isError: b.is_error === true });
      }
    }
  }
  return { items, chars, lastRawUserText };
}

function systemText(system: unknown): string {
  if (typeof system === 'string') return system;
  if (Array.isArray(system)) return system.map((b) => (isObj(b) && typeof b.text === 'string' ? b.text : '')).join('\n');
  return '';
}

/** A structured-output request (`output_format`, or `output_config.format`) → its format object. */
function jsonFormat(body: Json): Json | null {
  if (isObj(body.output_format)) return body.output_format;
  if (isObj(body.output_config) && isObj(body.output_config.format)) return body.output_config.format;
  return null;
}

/** Claude Code's title (and similar utility) requests: no tools, and a title instruction. */
function sideKind(tools: OfferedTool[], lastRawUserText: string, system: string, body: Json): SideKind | null {
  if (tools.length > 0) return null;
  const t = lastRawUserText;
  if (/<session>[\s\S]*<\/session>/.test(t) || /\btitle\b/i.test(system) || /^\s*(write|generate)\b[^\n]*\btitle\b/im.test(t)) return 'title';
  // Claude Code 2.0.x in a git repository asks, once a week, for five "frequently modified"
  // file names from the git log (measured on 2.0.12): a utility call, not a conversation turn.
  if (/analyzing git history/i.test(system) && /^Files modified by user:/.test(t)) return 'utility';
  return jsonFormat(body) ? 'json' : null;
}

export const anthropic: DialectModule = {
  dialect: 'anthropic',

  parse(body: unknown, http: HttpRequestInfo): ParsedModelRequest {
    if (!isObj(body)) throw new RequestError(400, 'request body must be a JSON object');
    if (!Array.isArray(body.messages)) throw new RequestError(400, 'messages: Field required');
    const tools: OfferedTool[] = Array.isArray(body.tools)
      ? body.tools.filter(isObj).map((t) => ({ name: String(t.name ?? ''), parameters: t.input_schema }))
      : [];
    const { items, chars, lastRawUserText } = parseItems(body.messages);
    const system = systemText(body.system);
    const side = sideKind(tools, lastRawUserText, system, body);
    const req: ParsedModelRequest = {
      dialect: 'anthropic',
      model: typeof body.model === 'string' ? body.model : 'scripted-model',
      stream: body.stream === true,
      items,
      tools,
      sessionKey: claudeSessionKey(body, http.headers),
      side,
      inputChars: chars + system.length,
    };
    const format = jsonFormat(body);
    if (side !== null && format) req.jsonSchema = format.schema;
    return req;
  },

  errorResponse(status: number, message: string, retryable = false): ErrorResponse {
    return {
      headers: { 'x-should-retry': retryable ? 'true' : 'false', 'request-id': `req_scripted_${status}` },
      body: { type: 'error', error: { type: anthropicErrorType(status), message } },
    };
  },

  resolveTool(intent, tools, id) {
    return resolveWith(intent, tools, id, {
      shellNames: ['Bash'],
      shellKey: 'command',
      shellDescription: true,
      mcpDefault: (s, t) => ({ name: `mcp__${s}__${t}` }),
    });
  },

  renderJson({ req, plan, call, id, inputTokens, outputTokens }: RenderInput): unknown {
    const content = call
      ? [{ type: 'tool_use', id: call.id, name: call.name, input: call.args }]
      : [{ type: 'text', text: plan.text }];
    return {
      id: `msg_${id}`,
      type: 'message',
      role: 'assistant',
      model: req.model,
      content,
      stop_reason: call ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: outputTokens },
    };
  },

  renderStream({ req, plan, call, id, inputTokens, outputTokens }: RenderInput) {
    const frames: Frame[] = [];
    frames.push({
      data: sseEvent('message_start', {
        type: 'message_start',
        message: {
          id: `msg_${id}`,
          type: 'message',
          role: 'assistant',
          model: req.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 },
        },
      }),
    });
    const block = call ? { type: 'tool_use', id: call.id, name: call.name, input: {} } : { type: 'text', text: '' };
    frames.push({ data: sseEvent('content_block_start', { type: 'content_block_start', index: 0, content_block: block }) });
    const pieces = call ? splitText(JSON.stringify(call.args), plan.chunks) : splitText(plan.text, plan.chunks);
    const head = frames.length;
    pieces.forEach((piece, i) => {
      const delta = call ? { type: 'input_json_delta', partial_json: piece } : { type: 'text_delta', text: piece };
      frames.push({ data: sseEvent('content_block_delta', { type: 'content_block_delta', index: 0, delta }), paced: i > 0 });
    });
    const half = head + Math.max(1, Math.floor(pieces.length / 2));
    if (plan.mode === 'fail') {
      frames.length = half;
      frames.push({
        data: sseEvent('error', { type: 'error', error: { type: 'overloaded_error', message: 'Mock stream failure' } }),
        paced: true,
      });
      return { frames, breakAfter: frames.length };
    }
    frames.push({ data: sseEvent('content_block_stop', { type: 'content_block_stop', index: 0 }) });
    frames.push({
      data: sseEvent('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: call ? 'tool_use' : 'end_turn', stop_sequence: null },
        usage: { output_tokens: outputTokens },
      }),
    });
    frames.push({ data: sseEvent('message_stop', { type: 'message_stop' }) });
    return { frames, breakAfter: half };
  },
};

/** A deterministic token count for `POST /v1/messages/count_tokens`. */
export function anthropicCountTokens(body: unknown): { input_tokens: number } {
  return { input_tokens: estimateTokens(JSON.stringify(body ?? '').length) };
}
