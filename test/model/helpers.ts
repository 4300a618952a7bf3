/** Helpers for the scripted model's HTTP-level unit tests. */

export interface HttpResult {
  status: number;
  headers: Headers;
  text: string;
  /** Set when reading the body failed (a broken stream). */
  bodyError: Error | null;
}

export async function request(url: string, init: RequestInit = {}): Promise<HttpResult> {
  const res = await fetch(url, init);
  let text = '';
  let bodyError: Error | null = null;
  if (res.body) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
      text += decoder.decode();
    } catch (err) {
      bodyError = err as Error;
    }
  }
  return { status: res.status, headers: res.headers, text, bodyError };
}

export function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<HttpResult> {
  return request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export interface SseFrame {
  event: string | null;
  data: string;
  /** The raw frame text without its terminator. */
  raw: string;
}

/** Split an SSE body into frames (blank-line separated, LF or CRLF). */
export function sseFrames(text: string): SseFrame[] {
  return text
    .split(/\r?\n\r?\n/)
    .filter((f) => f.trim() !== '')
    .map((raw) => {
      let event: string | null = null;
      const data: string[] = [];
      for (const line of raw.split(/\r?\n/)) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
        else data.push(line);
      }
      return { event, data: data.join('\n'), raw };
    });
}

export function json(frame: SseFrame): Record<string, unknown> {
  return JSON.parse(frame.data) as Record<string, unknown>;
}

/** Minimal request bodies per dialect around one user text. */
export const bodies = {
  anthropic(text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      model: 'claude-test',
      max_tokens: 100,
      stream: true,
      messages: [{ role: 'user', content: [{ type: 'text', text }] }],
      tools: [{ name: 'Bash', input_schema: { type: 'object', properties: { command: { type: 'string' }, description: { type: 'string' } } } }],
      ...extra,
    };
  },
  responses(text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      model: 'mock-model',
      stream: true,
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are a coding agent.' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: '<environment_context>\n  <cwd>/x</cwd>\n</environment_context>' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
      ],
      tools: [{ type: 'function', name: 'exec_command', parameters: { type: 'object', properties: { cmd: { type: 'string' } } } }],
      ...extra,
    };
  },
  chat(text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      model: 'mock-model',
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        { role: 'system', content: 'You are pi.' },
        { role: 'user', content: [{ type: 'text', text }] },
      ],
      tools: [{ type: 'function', function: { name: 'bash', parameters: { type: 'object', properties: { command: { type: 'string' } } } } }],
      ...extra,
    };
  },
  gemini(text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      contents: [{ role: 'user', parts: [{ text: '<session_context>\nThis is the Gemini CLI.\n</session_context>' }, { text }] }],
      tools: [{ functionDeclarations: [{ name: 'run_shell_command', parametersJsonSchema: { type: 'object', properties: { command: { type: 'string' } } } }] }],
      generationConfig: { temperature: 1 },
      ...extra,
    };
  },
};

export const paths = {
  anthropic: '/v1/messages?beta=true',
  responses: '/v1/responses',
  chat: '/v1/chat/completions',
  geminiStream: '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
  geminiJson: '/v1beta/models/gemini-2.5-flash:generateContent',
};
