/** Shared types of the scripted model server: the dialect-neutral view of a request and of a reply. */

export type Dialect = 'anthropic' | 'openai-responses' | 'openai-chat' | 'gemini';

/** One entry of a conversation history, reduced to what the reply logic needs. */
export type ConversationItem =
  /** The user's own text (system reminders, environment blocks and tool results removed). */
  | { kind: 'user'; text: string }
  | { kind: 'assistant'; text: string }
  | { kind: 'tool_call'; id: string; name: string }
  | { kind: 'tool_result'; id: string; output: string; isError: boolean };

/** A tool the client offered to the model. `namespace` is set for Responses namespace tools (MCP). */
export interface OfferedTool {
  name: string;
  namespace?: string;
  /** JSON schema of the arguments, when the client sent one. */
  parameters?: unknown;
}

export type SideKind = 'title' | 'json' | 'utility';

export interface ParsedModelRequest {
  dialect: Dialect;
  model: string;
  stream: boolean;
  items: ConversationItem[];
  tools: OfferedTool[];
  sessionKey: string | null;
  /** Set when this is a title/router/utility request rather than a conversation turn. */
  side: SideKind | null;
  /** For `side === 'json'`: the response schema the client asked for, if any. */
  jsonSchema?: unknown;
  /** Rough size of the request's text, for deterministic usage numbers. */
  inputChars: number;
  /** Chat Completions: the client asked for a usage chunk (`stream_options.include_usage`). */
  includeUsage?: boolean;
}

/** A tool call the reply logic wants, before a dialect maps it onto the client's native tool. */
export type ToolIntent =
  | { type: 'shell'; command: string }
  | { type: 'mcp'; server: string; tool: string; args: Record<string, unknown> };

/** A concrete tool call in the client's terms. */
export interface ToolCall {
  id: string;
  name: string;
  namespace?: string;
  args: Record<string, unknown>;
}

export type ReplyMode = 'normal' | 'break' | 'fail';

export interface ReplyPlan {
  /** 200, or the HTTP error status to answer with. */
  status: number;
  errorMessage: string;
  /** The error invites the client to retry (Anthropic's `x-should-retry: true`); else it says not to. */
  retryable: boolean;
  /** The text to answer (when no tool call). */
  text: string;
  tool: ToolIntent | null;
  mode: ReplyMode;
  delayMs: number;
  chunkDelayMs: number;
  chunks: number;
  /** Raw directive bodies found in the last user message (empty when they did not apply). */
  directives: string[];
  userMessages: string[];
  lastUserMessage: string | null;
}

/** One SSE frame; a `paced` frame is preceded by the `chunk-delay` pause. */
export interface Frame {
  data: string;
  paced?: boolean;
  /** Minimum pause before this frame, so that it reaches the client as a separate network read. */
  gapMs?: number;
}

/** What a dialect renders for a streamed answer: SSE frames, and where a `break` cuts the stream. */
export interface StreamRender {
  frames: Frame[];
  /** Number of frames written before the socket is destroyed for `[[cal:break]]`. */
  breakAfter: number;
}

export interface HttpRequestInfo {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Record<string, string | string[] | undefined>;
}

export interface ErrorResponse {
  headers: Record<string, string>;
  body: unknown;
}

export interface RenderInput {
  req: ParsedModelRequest;
  plan: ReplyPlan;
  /** The concrete tool call, when the plan has one. */
  call: ToolCall | null;
  /** Deterministic id derived from the request, for message/response ids. */
  id: string;
  inputTokens: number;
  outputTokens: number;
}

export interface DialectModule {
  dialect: Dialect;
  /** Parse a JSON body; throws RequestError for a body of the wrong shape. */
  parse(body: unknown, http: HttpRequestInfo): ParsedModelRequest;
  /** The dialect's native error body for an HTTP status. */
  errorResponse(status: number, message: string, retryable?: boolean): ErrorResponse;
  /** Map a tool intent onto the client's offered tools. */
  resolveTool(intent: ToolIntent, tools: OfferedTool[], id: string): ToolCall;
  renderJson(input: RenderInput): unknown;
  renderStream(input: RenderInput): StreamRender;
}

/** A request the server refuses, with the status to answer. */
export class RequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'RequestError';
  }
}
