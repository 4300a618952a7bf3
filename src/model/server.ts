/**
 * The scripted model server: one loopback HTTP server that speaks the Anthropic Messages, OpenAI
 * Responses, OpenAI Chat Completions and Gemini wire protocols, answers deterministically from each
 * request alone, and logs every request. See docs/scripted-model.md.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { anthropic, anthropicCountTokens } from './dialects/anthropic.js';
import { GEMINI_PATH, gemini, geminiCountTokens } from './dialects/gemini.js';
import { openaiChat } from './dialects/openai-chat.js';
import { openaiResponses } from './dialects/openai-responses.js';
import { planReply, replySummary } from './reply.js';
import { RequestLog, type ModelRequestLogEntry } from './request-log.js';
import { estimateTokens, hashId } from './text.js';
import { readBody, sleep, TooLargeError } from './http-body.js';
import { RequestError, type DialectModule, type HttpRequestInfo, type ParsedModelRequest, type ReplyPlan, type ToolCall } from './types.js';

export type { ModelRequestLogEntry } from './request-log.js';

export interface ModelServerOptions {
  /** Interface to bind; default 127.0.0.1. A non-loopback host needs `allowRemote`. */
  host?: string;
  /** Port; default 0 (any free port). */
  port?: number;
  /** Append one JSON line per request to this file. */
  logFile?: string;
  /** Largest accepted request body in bytes; default 32 MiB. Larger bodies get 413. */
  maxRequestBytes?: number;
  /** Allow binding a non-loopback host. */
  allowRemote?: boolean;
  /** Keep at most this many entries in the in-process log (default: all). The JSONL file keeps every entry. */
  maxLogEntries?: number;
}

export interface ModelServer {
  /** Base URL, e.g. http://127.0.0.1:43123 (no trailing slash, no /v1). */
  url: string;
  port: number;
  /** Every request so far, in order. */
  requests(): ModelRequestLogEntry[];
  /** Conversation turns only: side === false and dialect !== 'none'. */
  turnRequests(): ModelRequestLogEntry[];
  clearLog(): void;
  close(): Promise<void>;
}

export const DEFAULT_MAX_REQUEST_BYTES = 32 * 1024 * 1024;

/** True for 127.0.0.0/8, ::1 and localhost. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || h === '::ffff:127.0.0.1' || /^127(\.\d{1,3}){3}$/.test(h);
}

const MODEL_IDS = ['scripted-model'];

/** The dialect whose error shape best fits a request that matched no route. */
function guessDialect(path: string, headers: http.IncomingHttpHeaders): DialectModule {
  if (/^\/(v1beta|v1alpha)\//.test(path) || GEMINI_PATH.test(path) || headers['x-goog-api-key'] !== undefined) return gemini;
  if (path.startsWith('/v1/messages') || headers['anthropic-version'] !== undefined || headers['x-api-key'] !== undefined) return anthropic;
  if (path.includes('/responses')) return openaiResponses;
  return openaiChat;
}

const CALL_ID_PREFIX: Record<string, string> = {
  anthropic: 'toolu_',
  'openai-responses': 'call_',
  'openai-chat': 'call_',
  gemini: 'call_',
};

export async function startModelServer(opts: ModelServerOptions = {}): Promise<ModelServer> {
  const host = opts.host ?? '127.0.0.1';
  if (!opts.allowRemote && !isLoopbackHost(host)) {
    throw new Error(`refusing to bind the scripted model server to non-loopback host ${host} (pass allowRemote to override)`);
  }
  const maxBytes = opts.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
  const log = new RequestLog(opts.logFile, opts.maxLogEntries);
  const active = new Set<AbortController>();

  function record(entry: Omit<ModelRequestLogEntry, 'seq' | 'time'>, seq: number): void {
    log.add({ seq, time: new Date().toISOString(), ...entry });
  }

  function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}, head = false): void {
    if (res.headersSent || res.destroyed) return;
    const data = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(data), ...headers });
    res.end(head ? undefined : data);
  }

  function sendError(res: http.ServerResponse, dialect: DialectModule, status: number, message: string, extra: Record<string, string> = {}, head = false, retryable = false): void {
    const err = dialect.errorResponse(status, message, retryable);
    sendJson(res, status, err.body, { ...err.headers, ...extra }, head);
  }

  async function writeFrame(res: http.ServerResponse, data: string): Promise<void> {
    if (res.destroyed) return;
    if (!res.write(data)) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    }
  }

  async function answerModel(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    dialect: DialectModule,
    info: HttpRequestInfo,
    seq: number,
  ): Promise<void> {
    const base = { method: info.method, path: info.path };
    const none = { dialect: 'none' as const, sessionKey: null, side: false, userMessages: [], lastUserMessage: null, reply: null, directives: [], model: null };
    let raw: Buffer;
    try {
      raw = await readBody(req, maxBytes);
    } catch (err) {
      if (!(err instanceof TooLargeError)) {
        res.destroy();
        return;
      }
      record({ ...base, ...none, status: 413 }, seq);
      res.on('finish', () => {
        if (!req.complete) setTimeout(() => req.socket.destroy(), 2000).unref();
      });
      req.resume();
      sendError(res, dialect, 413, `Request body exceeds ${maxBytes} bytes`, { connection: 'close' });
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      record({ ...base, ...none, status: 400 }, seq);
      sendError(res, dialect, 400, 'Malformed JSON in request body');
      return;
    }
    let parsed: ParsedModelRequest;
    try {
      parsed = dialect.parse(body, info);
    } catch (err) {
      const status = err instanceof RequestError ? err.status : 400;
      record({ ...base, ...none, status }, seq);
      sendError(res, dialect, status, (err as Error).message);
      return;
    }
    const plan: ReplyPlan = planReply(parsed);
    const id = hashId(parsed.dialect, parsed.model, parsed.items);
    const call: ToolCall | null = plan.tool ? dialect.resolveTool(plan.tool, parsed.tools, `${CALL_ID_PREFIX[parsed.dialect] ?? ''}${id}`) : null;
    const failNonStream = plan.status === 200 && plan.mode === 'fail' && !parsed.stream;
    record(
      {
        ...base,
        dialect: parsed.dialect,
        status: failNonStream ? 500 : plan.status,
        sessionKey: parsed.sessionKey,
        side: parsed.side !== null,
        userMessages: plan.userMessages,
        lastUserMessage: plan.lastUserMessage,
        reply: failNonStream ? null : replySummary(plan, call?.name ?? null),
        directives: plan.directives,
        model: parsed.model,
      },
      seq,
    );

    const ac = new AbortController();
    active.add(ac);
    res.on('close', () => ac.abort());
    try {
      await sleep(plan.delayMs, ac.signal);
      if (ac.signal.aborted) return;
      if (plan.status !== 200) {
        sendError(res, dialect, plan.status, plan.errorMessage, {}, false, plan.retryable);
        return;
      }
      const outputChars = call ? JSON.stringify(call.args).length : plan.text.length;
      const input = {
        req: parsed,
        plan,
        call,
        id,
        inputTokens: estimateTokens(parsed.inputChars),
        outputTokens: estimateTokens(outputChars),
      };
      if (!parsed.stream) {
        if (plan.mode === 'break') {
          res.destroy();
          return;
        }
        if (plan.mode === 'fail') {
          sendError(res, dialect, 500, 'Mock stream failure');
          return;
        }
        sendJson(res, 200, dialect.renderJson(input));
        return;
      }
      const { frames, breakAfter } = dialect.renderStream(input);
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
      res.flushHeaders();
      for (let i = 0; i < frames.length; i++) {
        if (plan.mode === 'break' && i >= breakAfter) break;
        const frame = frames[i];
        if (!frame) continue;
        const pause = Math.max(frame.paced ? plan.chunkDelayMs : 0, frame.gapMs ?? 0);
        if (pause > 0) await sleep(pause, ac.signal);
        if (ac.signal.aborted) return;
        await writeFrame(res, frame.data);
      }
      if (ac.signal.aborted) return;
      if (plan.mode === 'break') {
        // Let the written frames reach the client, then cut the connection without finishing the response.
        await new Promise<void>((resolve) => setTimeout(resolve, 20));
        res.socket?.destroy();
        res.destroy();
        return;
      }
      res.end();
    } finally {
      active.delete(ac);
    }
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const seq = log.seq();
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = url.pathname;
    const method = (req.method ?? 'GET').toUpperCase();
    const info: HttpRequestInfo = { method, path, query: url.searchParams, headers: req.headers };
    const head = method === 'HEAD';
    const note = (status: number): void =>
      record(
        { method, path, status, dialect: 'none', sessionKey: null, side: false, userMessages: [], lastUserMessage: null, reply: null, directives: [], model: null },
        seq,
      );
    const wrongMethod = (dialect: DialectModule, allow: string): void => {
      note(405);
      req.resume();
      sendError(res, dialect, 405, `Method ${method} not allowed on ${path}`, { allow }, head);
    };
    const getOnly = (dialect: DialectModule, body: () => unknown): void => {
      if (method !== 'GET' && method !== 'HEAD') return wrongMethod(dialect, 'GET, HEAD');
      note(200);
      req.resume();
      sendJson(res, 200, body(), {}, head);
    };

    if (path === '/api/hello') return getOnly(anthropic, () => ({}));
    const gem = GEMINI_PATH.exec(path);
    if (gem) {
      const action = gem[3];
      if (action !== 'streamGenerateContent' && action !== 'generateContent' && action !== 'countTokens') {
        note(404);
        req.resume();
        sendError(res, gemini, 404, `Method ${action ?? ''} is not supported by the scripted model`, {}, head);
        return;
      }
      if (method !== 'POST') return wrongMethod(gemini, 'POST');
      if (action === 'countTokens') return countTokens(req, res, gemini, seq, info, (b) => geminiCountTokens(b));
      return answerModel(req, res, gemini, info, seq);
    }
    if (/^\/(v1beta|v1|v1alpha)\/models$/.test(path) && (req.headers['x-goog-api-key'] !== undefined || path !== '/v1/models')) {
      return getOnly(gemini, () => ({
        models: MODEL_IDS.map((id) => ({ name: `models/${id}`, displayName: id, supportedGenerationMethods: ['generateContent', 'streamGenerateContent', 'countTokens'] })),
      }));
    }
    if (path === '/v1/models' || path === '/models') {
      if (req.headers['anthropic-version'] !== undefined) {
        return getOnly(anthropic, () => ({
          data: MODEL_IDS.map((id) => ({ type: 'model', id, display_name: id, created_at: '2025-01-01T00:00:00Z' })),
          has_more: false,
          first_id: MODEL_IDS[0],
          last_id: MODEL_IDS[MODEL_IDS.length - 1],
        }));
      }
      return getOnly(openaiChat, () => ({ object: 'list', data: MODEL_IDS.map((id) => ({ id, object: 'model', created: 0, owned_by: 'cal' })) }));
    }
    const single = /^\/v1\/models\/([^/]+)$/.exec(path);
    if (single) {
      const id = decodeURIComponent(single[1] ?? '');
      if (req.headers['anthropic-version'] !== undefined) {
        return getOnly(anthropic, () => ({ type: 'model', id, display_name: id, created_at: '2025-01-01T00:00:00Z' }));
      }
      return getOnly(openaiChat, () => ({ id, object: 'model', created: 0, owned_by: 'cal' }));
    }
    if (path === '/v1/messages/count_tokens') {
      if (method !== 'POST') return wrongMethod(anthropic, 'POST');
      return countTokens(req, res, anthropic, seq, info, (b) => anthropicCountTokens(b));
    }
    const routes: Array<[string[], DialectModule]> = [
      [['/v1/messages'], anthropic],
      [['/v1/responses', '/responses'], openaiResponses],
      [['/v1/chat/completions', '/chat/completions'], openaiChat],
    ];
    for (const [paths, dialect] of routes) {
      if (!paths.includes(path)) continue;
      if (method !== 'POST') return wrongMethod(dialect, 'POST');
      return answerModel(req, res, dialect, info, seq);
    }
    note(404);
    req.resume();
    sendError(res, guessDialect(path, req.headers), 404, `Not found: ${method} ${path}`, {}, head);
  }

  async function countTokens(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    dialect: DialectModule,
    seq: number,
    info: HttpRequestInfo,
    count: (body: unknown) => unknown,
  ): Promise<void> {
    const none = { dialect: 'none' as const, sessionKey: null, side: false, userMessages: [], lastUserMessage: null, reply: null, directives: [], model: null };
    let body: unknown;
    try {
      body = JSON.parse((await readBody(req, maxBytes)).toString('utf8'));
    } catch (err) {
      const status = err instanceof TooLargeError ? 413 : 400;
      record({ method: info.method, path: info.path, status, ...none }, seq);
      if (status === 413) req.resume();
      sendError(res, dialect, status, status === 413 ? `Request body exceeds ${maxBytes} bytes` : 'Malformed JSON in request body', status === 413 ? { connection: 'close' } : {});
      return;
    }
    record({ method: info.method, path: info.path, status: 200, ...none }, seq);
    sendJson(res, 200, count(body));
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      try {
        if (!res.headersSent && !res.destroyed) {
          const url = new URL(req.url ?? '/', 'http://localhost');
          sendError(res, guessDialect(url.pathname, req.headers), 500, `Scripted model internal error: ${(err as Error)?.message ?? String(err)}`);
        } else {
          res.destroy();
        }
      } catch {
        res.destroy();
      }
    });
  });
  // An idle connection is never closed by the server: the client closes it, or close() ends it.
  // With any idle timeout, a CLI that pools its connections can send its next request on one the
  // server has closed (or is closing at that moment) and the request dies with ECONNRESET: seen
  // with Node's 5 s default among 16 concurrent Claude sessions, and with 65 s for 2 of 16 live
  // Claude 2.1.328 panes continued about 3 minutes after their last turn (the CLI runs with no
  // retries against this server, so the turn failed). A person trying `cal demo` or
  // `cal model serve` continues a session after any pause.
  server.keepAliveTimeout = 0;
  server.on('clientError', (_err, socket) => {
    if (socket.writable && !socket.destroyed) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    else socket.destroy();
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', () => {
    // Runtime socket errors are per connection; the server keeps serving.
  });

  const addr = server.address() as AddressInfo;
  const urlHost = addr.address.includes(':') ? `[${addr.address}]` : addr.address;
  const url = `http://${host === 'localhost' ? 'localhost' : urlHost}:${addr.port}`;
  let closed: Promise<void> | null = null;

  return {
    url,
    port: addr.port,
    requests: () => log.all(),
    turnRequests: () => log.all().filter((e) => !e.side && e.dialect !== 'none'),
    clearLog: () => log.clear(),
    close(): Promise<void> {
      closed ??= new Promise<void>((resolve) => {
        for (const ac of active) ac.abort();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
