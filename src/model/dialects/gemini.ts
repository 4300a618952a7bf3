/** Gemini API (`POST /v1beta/models/{model}:streamGenerateContent` and `:generateContent`), as used by Gemini CLI. */
import { estimateTokens, splitText, userOwnText } from '../text.js';
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
} from '../types.js';

type Json = Record<string, unknown>;

function isObj(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** `/v1beta/models/gemini-2.5-flash:streamGenerateContent` → model and method. */
export const GEMINI_PATH = /^\/(v1beta|v1|v1alpha)\/models\/([^/:]+):([A-Za-z]+)$/;

export function geminiStatusName(status: number): string {
  switch (status) {
    case 400:
      return 'INVALID_ARGUMENT';
    case 401:
      return 'UNAUTHENTICATED';
    case 403:
      return 'PERMISSION_DENIED';
    case 404:
      return 'NOT_FOUND';
    case 409:
      return 'ABORTED';
    case 429:
      return 'RESOURCE_EXHAUSTED';
    case 499:
      return 'CANCELLED';
    case 501:
      return 'UNIMPLEMENTED';
    case 503:
      return 'UNAVAILABLE';
    case 504:
      return 'DEADLINE_EXCEEDED';
    default:
      return status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION';
  }
}

function responseText(response: unknown): string {
  if (!isObj(response)) return typeof response === 'string' ? response : JSON.stringify(response ?? '');
  for (const key of ['output', 'content', 'result', 'llmContent']) {
    const v = response[key];
    if (typeof v === 'string') return v;
  }
  if (isObj(response.error) && typeof response.error.message === 'string') return response.error.message;
  if (typeof response.error === 'string') return response.error;
  return JSON.stringify(response);
}

function parseContents(contents: unknown[]): { items: ConversationItem[]; chars: number } {
  const items: ConversationItem[] = [];
  let chars = 0;
  for (const c of contents) {
    if (!isObj(c)) throw new RequestError(400, 'contents: each content must be an object');
    const role = c.role ?? 'user';
    const parts = Array.isArray(c.parts) ? c.parts : [];
    for (const p of parts) {
      if (!isObj(p)) continue;
      if (typeof p.text === 'string') {
        chars += p.text.length;
        if (p.thought === true) continue;
        if (role === 'user') {
          const own = userOwnText(p.text);
          if (own !== null) items.push({ kind: 'user', text: own });
        } else if (role === 'model' && p.text !== '') {
          items.push({ kind: 'assistant', text: p.text });
        }
      } else if (isObj(p.functionCall)) {
        const fc = p.functionCall;
        items.push({ kind: 'tool_call', id: String(fc.id ?? fc.name ?? ''), name: String(fc.name ?? '') });
      } else if (isObj(p.functionResponse)) {
        const fr = p.functionResponse;
        const output = responseText(fr.response);
        chars += output.length;
        items.push({ kind: 'tool_result', id: String(fr.id ?? fr.name ?? ''), output, isError: isObj(fr.response) && fr.response.error !== undefined });
      }
    }
  }
  return { items, chars };
}

function parseTools(tools: unknown): OfferedTool[] {
  if (!Array.isArray(tools)) return [];
  const out: OfferedTool[] = [];
  for (const t of tools) {
    if (!isObj(t) || !Array.isArray(t.functionDeclarations)) continue;
    for (const d of t.functionDeclarations) {
      if (isObj(d) && typeof d.name === 'string') out.push({ name: d.name, parameters: d.parametersJsonSchema ?? d.parameters });
    }
  }
  return out;
}

function systemText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (isObj(v) && Array.isArray(v.parts)) return v.parts.map((p) => (isObj(p) && typeof p.text === 'string' ? p.text : '')).join('\n');
  return '';
}

function header(headers: HttpRequestInfo['headers'], name: string): string | null {
  const v = headers[name];
  return typeof v === 'string' ? v : Array.isArray(v) ? (v[0] ?? null) : null;
}

function parts(input: RenderInput, text: string): Json[] {
  // The real API sends no call id; Gemini CLI makes its own.
  if (input.call) return [{ functionCall: { name: input.call.name, args: input.call.args } }];
  return [{ text }];
}

function usage(input: RenderInput): Json {
  return {
    promptTokenCount: input.inputTokens,
    candidatesTokenCount: input.outputTokens,
    totalTokenCount: input.inputTokens + input.outputTokens,
  };
}

export const gemini: DialectModule = {
  dialect: 'gemini',

  parse(body: unknown, http: HttpRequestInfo): ParsedModelRequest {
    const m = GEMINI_PATH.exec(http.path);
    if (!m) throw new RequestError(404, `Unknown Gemini path ${http.path}`);
    if (!isObj(body)) throw new RequestError(400, 'request body must be a JSON object');
    if (!Array.isArray(body.contents)) throw new RequestError(400, '* GenerateContentRequest.contents: contents is not specified');
    const method = m[3] ?? '';
    const { items, chars } = parseContents(body.contents);
    const config = isObj(body.generationConfig) ? body.generationConfig : {};
    const json = config.responseMimeType === 'application/json';
    const req: ParsedModelRequest = {
      dialect: 'gemini',
      model: decodeURIComponent(m[2] ?? 'gemini'),
      stream: method === 'streamGenerateContent',
      items,
      tools: parseTools(body.tools),
      sessionKey: header(http.headers, 'x-gemini-session-id') ?? header(http.headers, 'x-session-id') ?? null,
      side: json ? 'json' : method === 'generateContent' ? 'utility' : null,
      inputChars: chars + systemText(body.systemInstruction).length,
    };
    if (json) req.jsonSchema = config.responseJsonSchema ?? config.responseSchema;
    return req;
  },

  errorResponse(status: number, message: string): ErrorResponse {
    return { headers: {}, body: { error: { code: status, message, status: geminiStatusName(status) } } };
  },

  resolveTool(intent, tools, id) {
    return resolveWith(intent, tools, id, {
      shellNames: ['run_shell_command', 'shell'],
      shellKey: 'command',
      shellDescription: false,
      mcpDefault: (_s, t) => ({ name: t }),
    });
  },

  renderJson(input: RenderInput): unknown {
    return {
      candidates: [{ content: { role: 'model', parts: parts(input, input.plan.text) }, finishReason: 'STOP', index: 0 }],
      usageMetadata: usage(input),
      modelVersion: input.req.model,
      responseId: input.id,
    };
  },

  renderStream(input: RenderInput) {
    const frames: Frame[] = [];
    const pieces = input.call ? [''] : splitText(input.plan.text, input.plan.chunks);
    const half = Math.max(1, Math.floor(pieces.length / 2));
    pieces.forEach((piece, i) => {
      const last = i === pieces.length - 1;
      const candidate: Json = { content: { role: 'model', parts: parts(input, piece) }, index: 0 };
      const chunk: Json = { candidates: [candidate], modelVersion: input.req.model, responseId: input.id };
      if (last && input.plan.mode !== 'fail') {
        candidate.finishReason = 'STOP';
        chunk.usageMetadata = usage(input);
      }
      frames.push({ data: `data: ${JSON.stringify(chunk)}\r\n\r\n`, paced: i > 0 });
    });
    if (input.plan.mode === 'fail') {
      frames.length = half;
      // Like the real API, a mid-stream error is a bare JSON object (no `data:` prefix); the SDK
      // only recognises it when it arrives as its own network read, hence the gap.
      frames.push({ data: JSON.stringify({ error: { code: 500, message: 'Mock stream failure', status: 'INTERNAL' } }), paced: true, gapMs: 50 });
      return { frames, breakAfter: frames.length };
    }
    return { frames, breakAfter: pieces.length > 1 ? half : 0 };
  },
};

/** A deterministic answer for `:countTokens`. */
export function geminiCountTokens(body: unknown): { totalTokens: number } {
  return { totalTokens: estimateTokens(JSON.stringify(body ?? '').length) };
}
