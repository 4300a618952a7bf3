import type http from 'node:http';

/** HTTP plumbing of the scripted model server: bounded request bodies and cancellable delays. */
/** The request body is larger than the server accepts (answered with 413). */
export class TooLargeError extends Error {}

/** Reads a request body up to `max` bytes; a larger one is a TooLargeError without buffering it. */
export function readBody(req: http.IncomingMessage, max: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > max) return Promise.reject(new TooLargeError());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (err: Error | null, value?: Buffer): void => {
      if (done) return;
      done = true;
      if (err) reject(err);
      else resolve(value ?? Buffer.alloc(0));
    };
    req.on('data', (c: Buffer) => {
      if (done) return;
      size += c.length;
      if (size > max) {
        chunks.length = 0;
        finish(new TooLargeError());
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => finish(null, Buffer.concat(chunks)));
    req.on('error', (e) => finish(e));
    req.on('close', () => finish(new Error('client closed the request')));
  });
}

/** Waits `ms`, or less when the request is aborted (a delay directive never outlives its client). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

