/** OpenAI Responses API (`POST /v1/responses`), as used by Codex. */
import { sseEvent, splitText, userOwnText } from '../text.js';
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

/** OpenAI-style error body, shared with Chat Completions. */
export function openAiError(status: number, message: string): ErrorResponse {
  let type = 'invalid_request_error';
  let code: string | null = null;
  if (status === 401) code = 'invalid_api_key';
  else if (status === 404) code = 'not_found';
  else if (status === 413) code = 'request_too_large';
  else if (status === 429) {
    type = 'requests';
    code = 'rate_limit_exceeded';
  } else if (status >= 500) type = 'server_error';
  return { headers: { 'x-request-id': `req_scripted_${status}` }, body: { error: { message, type, param: null, code } } };
}

function header(headers: HttpRequestInfo['headers'], name: string): string | null {
  const v = headers[name];
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return v[0] ?? null;
  return null;
}

function partsText(content: unknown): string[] {
  if (typeof content === 'string') return [content];
  if (!Array.isArray(content)) return [];
  return content.filter(isObj).flatMap((p) => (typeof p.text === 'string' ? [p.text] : []));
}

function outputText(output: unknown): string {
  if (typeof output === 'string') {
    // Codex 0.100.0 sends an MCP tool's result as its content parts in a JSON string.
    if (/^\s*\[\s*\{/.test(output)) {
      try {
        const parts: unknown = JSON.parse(output);
        if (Array.isArray(parts) && parts.every((p) => isObj(p) && typeof p.type === 'string')) return partsText(parts).join('\n');
      } catch {
        // not JSON: the text as it is
      }
    }
    return output;
  }
  if (Array.isArray(output)) return partsText(output).join('\n');
  if (isObj(output) && typeof output.content === 'string') return output.content;
  return output === undefined ? '' : JSON.stringify(output);
}

function parseInput(input: unknown): { items: ConversationItem[]; chars: number; lastRawUserText: string } {
  const items: ConversationItem[] = [];
  let chars = 0;
  let lastRawUserText = '';
  const list: unknown[] = typeof input === 'string' ? [{ type: 'message', role: 'user', content: input }] : Array.isArray(input) ? input : [];
  for (const it of list) {
    if (!isObj(it)) continue;
    const type = it.type ?? (typeof it.role === 'string' ? 'message' : undefined);
    if (type === 'message') {
      const texts = partsText(it.content);
      for (const t of texts) {
        chars += t.length;
        if (it.role === 'user') {
          lastRawUserText = t;
          const own = userOwnText(t);
          if (own !== null) items.push({ kind: 'user', text: own });
        } else if (it.role === 'assistant') {
          items.push({ kind: 'assistant', text: t });
        }
      }
    } else if (type === 'function_call' || type === 'custom_tool_call' || type === 'local_shell_call') {
      items.push({ kind: 'tool_call', id: String(it.call_id ?? it.id ?? ''), name: String(it.name ?? type) });
    } else if (type === 'function_call_output' || type === 'custom_tool_call_output' || type === 'local_shell_call_output') {
      const output = outputText(it.output);
      chars += output.length;
      items.push({ kind: 'tool_result', id: String(it.call_id ?? ''), output, isError: false });
    }
  }
  return { items, chars, lastRawUserText };
}

function parseTools(tools: unknown): OfferedTool[] {
  if (!Array.isArray(tools)) return [];
  const out: OfferedTool[] = [];
  for (const t of tools) {
    if (!isObj(t)) continue;
    if (t.type === 'namespace' && typeof t.name === 'string' && Array.isArray(t.tools)) {
      for (const sub of t.tools) if (isObj(sub) && typeof sub.name === 'string') out.push({ name: sub.name, namespace: t.name, parameters: sub.parameters });
    } else if (typeof t.name === 'string') {
      out.push({ name: t.name, parameters: t.parameters });
    }
  }
  return out;
}

function sideKind(headers: HttpRequestInfo['headers'], tools: OfferedTool[], lastRawUserText: string): SideKind | null {
  const meta = header(headers, 'x-codex-turn-metadata');
  if (meta) {
    try {
      const parsed: unknown = JSON.parse(meta);
      if (isObj(parsed) && parsed.thread_source === 'thread_title') return 'title';
    } catch {
      // ignore a malformed header
    }
  }
  if (tools.length === 0 && /^\s*Generate a concise,? single-line task title/i.test(lastRawUserText)) return 'title';
  return null;
}

function responseObject(input: RenderInput, status: string, output: unknown[], usage: unknown, error: unknown = null): Json {
  return {
    id: `resp_${input.id}`,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    error,
    incomplete_details: null,
    model: input.req.model,
    output,
    parallel_tool_calls: false,
    usage,
  };
}

function usageOf(input: RenderInput): Json {
  return {
    input_tokens: input.inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: input.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input.inputTokens + input.outputTokens,
  };
}

function messageItem(input: RenderInput, text: string, status: string): Json {
  return {
    id: `msg_${input.id}`,
    type: 'message',
    status,
    role: 'assistant',
    content: status === 'in_progress' ? [] : [{ type: 'output_text', text, annotations: [] }],
  };
}

function callItem(input: RenderInput, args: string, status: string): Json {
  const call = input.call;
  if (!call) throw new Error('no tool call');
  const item: Json = { id: `fc_${input.id}`, type: 'function_call', status, call_id: call.id, name: call.name, arguments: args };
  if (call.namespace !== undefined) item.namespace = call.namespace;
  return item;
}

export const openaiResponses: DialectModule = {
  dialect: 'openai-responses',

  parse(body: unknown, http: HttpRequestInfo): ParsedModelRequest {
    if (!isObj(body)) throw new RequestError(400, 'request body must be a JSON object');
    if (body.input === undefined) throw new RequestError(400, "Missing required parameter: 'input'.");
    const tools = parseTools(body.tools);
    const { items, chars, lastRawUserText } = parseInput(body.input);
    const instructions = typeof body.instructions === 'string' ? body.instructions : '';
    return {
      dialect: 'openai-responses',
      model: typeof body.model === 'string' ? body.model : 'scripted-model',
      stream: body.stream === true,
      items,
      tools,
      sessionKey:
        header(http.headers, 'session-id') ??
        header(http.headers, 'session_id') ??
        header(http.headers, 'thread-id') ??
        (typeof body.prompt_cache_key === 'string' ? body.prompt_cache_key : null),
      side: sideKind(http.headers, tools, lastRawUserText),
      inputChars: chars + instructions.length,
    };
  },

  errorResponse: openAiError,

  resolveTool(intent, tools, id) {
    return resolveWith(intent, tools, id, {
      shellNames: ['exec_command', 'shell', 'shell_command', 'local_shell'],
      shellKey: 'cmd',
      shellDescription: false,
      mcpNamespaces: true,
      mcpDefault: (s, t) => ({ name: t, namespace: `mcp__${s}` }),
    });
  },

  renderJson(input: RenderInput): unknown {
    const item = input.call ? callItem(input, JSON.stringify(input.call.args), 'completed') : messageItem(input, input.plan.text, 'completed');
    return responseObject(input, 'completed', [item], usageOf(input));
  },

  renderStream(input: RenderInput) {
    const frames: Frame[] = [];
    let seq = 0;
    const ev = (type: string, payload: Json, paced = false): void => {
      frames.push({ data: sseEvent(type, { type, sequence_number: seq++, ...payload }), paced });
    };
    ev('response.created', { response: responseObject(input, 'in_progress', [], null) });
    ev('response.in_progress', { response: responseObject(input, 'in_progress', [], null) });
    const { plan, call } = input;
    let head: number;
    let pieces: string[];
    let finalItem: Json;
    if (call) {
      const args = JSON.stringify(call.args);
      const itemId = `fc_${input.id}`;
      ev('response.output_item.added', { output_index: 0, item: callItem(input, '', 'in_progress') });
      head = frames.length;
      pieces = splitText(args, plan.chunks);
      pieces.forEach((delta, i) => ev('response.function_call_arguments.delta', { item_id: itemId, output_index: 0, delta }, i > 0));
      if (plan.mode !== 'fail') {
        ev('response.function_call_arguments.done', { item_id: itemId, output_index: 0, arguments: args });
      }
      finalItem = callItem(input, args, 'completed');
    } else {
      const itemId = `msg_${input.id}`;
      ev('response.output_item.added', { output_index: 0, item: messageItem(input, '', 'in_progress') });
      ev('response.content_part.added', { item_id: itemId, output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
      head = frames.length;
      pieces = splitText(plan.text, plan.chunks);
      pieces.forEach((delta, i) => ev('response.output_text.delta', { item_id: itemId, output_index: 0, content_index: 0, delta, logprobs: [] }, i > 0));
      if (plan.mode !== 'fail') {
        ev('response.output_text.done', { item_id: itemId, output_index: 0, content_index: 0, text: plan.text, logprobs: [] });
        ev('response.content_part.done', { item_id: itemId, output_index: 0, content_index: 0, part: { type: 'output_text', text: plan.text, annotations: [] } });
      }
      finalItem = messageItem(input, plan.text, 'completed');
    }
    const half = head + Math.max(1, Math.floor(pieces.length / 2));
    if (plan.mode === 'fail') {
      frames.length = half;
      seq = half;
      ev(
        'response.failed',
        { response: responseObject(input, 'failed', [], null, { code: 'server_error', message: 'Mock response.failed' }) },
        true,
      );
      return { frames, breakAfter: frames.length };
    }
    ev('response.output_item.done', { output_index: 0, item: finalItem });
    ev('response.completed', { response: responseObject(input, 'completed', [finalItem], usageOf(input)) });
    return { frames, breakAfter: half };
  },
};
