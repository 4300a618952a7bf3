import type { ApiReply } from './types.js';

/** POSTs JSON and returns the parsed body, or a failed reply carrying the vendor's own message. */
export async function postJson(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  timeoutMs: number,
  extract: (json: unknown) => string | null,
  cancel?: AbortSignal,
): Promise<ApiReply> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal: cancel ? AbortSignal.any([AbortSignal.timeout(timeoutMs), cancel]) : AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    if (cancel?.aborted) return { ok: false, status: null, message: 'cancelled by the caller' };
    return { ok: false, status: null, message: `request to ${new URL(url).origin} failed: ${(err as Error).message}` };
  }
  const text = await res.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  if (!res.ok) {
    const vendor = (json as { error?: { message?: unknown } } | null)?.error?.message;
    return { ok: false, status: res.status, message: `HTTP ${res.status}: ${typeof vendor === 'string' ? vendor : text.slice(0, 200)}` };
  }
  const answer = extract(json);
  if (answer === null) return { ok: false, status: res.status, message: 'the API answered without any text' };
  return { ok: true, text: answer };
}
