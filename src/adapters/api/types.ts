/**
 * API providers: no CLI and no transcript of their own. cal keeps the conversation in its state
 * directory (the agent-session layer) and sends the whole history plus the new message.
 */
export interface ChatMessage {
  role: 'user' | 'assistant';
  content: string;
}

export interface ApiRequest {
  model: string;
  system: string | null;
  messages: ChatMessage[];
  env: Record<string, string>;
  timeoutMs: number;
  /** Cancels the request (the exchange is then not added to the history). */
  signal?: AbortSignal;
}

export type ApiReply = { ok: true; text: string } | { ok: false; status: number | null; message: string };

export interface ApiProviderAdapter {
  readonly name: 'anthropic' | 'openai';
  readonly defaultModel: string;
  /** Environment variables it reads, by name (the handle records names, never values). */
  readonly envNames: readonly string[];
  /** Throws a CalError (usage) when no credential is configured. */
  checkEnv(env: Record<string, string>): void;
  send(req: ApiRequest): Promise<ApiReply>;
}
