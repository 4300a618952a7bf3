import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { CalError } from '../errors.js';

/**
 * A file cal reads from a path the user gave (--mcp-config, --system-prompt-file, a plan): a
 * regular file of bounded size, read at once, or refused with `usage`. Opened O_NONBLOCK, so a
 * FIFO with no writer answers at once instead of hanging cal; checked by fstat on the open file,
 * so /dev/zero, a FIFO or a folder is refused before a byte is read; read up to the bound, so a
 * file that grows meanwhile cannot grow cal's memory with it.
 */
export const USER_FILE_MAX_BYTES = 4 << 20;

export function readUserFileSync(file: string, what: string, maxBytes = USER_FILE_MAX_BYTES): string {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    throw new CalError('usage', `${what} ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) {
      const kind = st.isDirectory() ? 'a folder' : st.isFIFO() ? 'a FIFO' : st.isCharacterDevice() || st.isBlockDevice() ? 'a device' : st.isSocket() ? 'a socket' : 'not a regular file';
      throw new CalError('usage', `${what} ${file} is ${kind}: give a regular file`);
    }
    if (st.size > maxBytes) throw new CalError('usage', `${what} ${file} is ${st.size} bytes, over the ${maxBytes}-byte limit`);
    const buf = Buffer.alloc(maxBytes + 1);
    let got = 0;
    for (;;) {
      const n = readSync(fd, buf, got, buf.length - got, null);
      if (n === 0) break;
      got += n;
      if (got > maxBytes) throw new CalError('usage', `${what} ${file} is over the ${maxBytes}-byte limit`);
    }
    return buf.subarray(0, got).toString('utf8');
  } finally {
    closeSync(fd);
  }
}
