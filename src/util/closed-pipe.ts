/**
 * `cal inspect | head -3`: the reader closes the pipe and the next write fails with EPIPE. That
 * is not an error of cal's: from then on writes to that stream are dropped, commands that only
 * print (an `events --follow`) stop through `stdoutClosed`, and a turn in flight still settles
 * and releases its handle, so the exit code is the command's own (0 for one that printed).
 */
const controller = new AbortController();

/** Aborts when stdout's reader has gone. */
export const stdoutClosed: AbortSignal = controller.signal;

let installed = false;

export function endQuietlyOnClosedPipe(): void {
  if (installed) return;
  installed = true;
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      // EIO: the terminal the stream wrote to went away (its window closed): as closed as a pipe.
      if (err.code !== 'EPIPE' && err.code !== 'EIO' && err.code !== 'ERR_STREAM_DESTROYED') throw err;
      // Writes after this are dropped, not queued on a stream that can never drain.
      stream.write = ((_chunk: unknown, encoding?: unknown, callback?: unknown) => {
        const done = typeof encoding === 'function' ? encoding : callback;
        if (typeof done === 'function') queueMicrotask(() => (done as () => void)());
        return true;
      }) as typeof stream.write;
      if (stream === process.stdout) controller.abort();
    });
  }
}
