import { describe, expect, it } from 'vitest';
import { toCalError } from '../../src/errors.js';
import { stateWriteError } from '../../src/state/fs.js';

/**
 * Issue 40, item 8: a state directory made read-only mid-turn (chmod a-w, a read-only remount)
 * is the documented usage error (exit 2) naming the file, with the hint to run cal recover;
 * never `internal` (exit 1), wherever in cal the refused write surfaced.
 */
function refused(code: string, syscall: string, file: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: refused, ${syscall} '${file}'`), { code, syscall, path: file, errno: -13 });
}

describe('a state directory that refuses writes mid-turn', () => {
  const file = '/s/turns/abcdef1234/t0002-abc123.json';

  for (const [code, syscall, says] of [
    ['EACCES', 'open', /permission denied/],
    ['EPERM', 'unlink', /not permitted/],
    ['EROFS', 'rename', /read-only/],
    ['ENOSPC', 'write', /no space/],
    ['EDQUOT', 'write', /quota/],
  ] as const) {
    it(`${code} from ${syscall} is usage naming the file, with cal recover`, () => {
      for (const e of [toCalError(refused(code, syscall, file)), toCalError(stateWriteError(refused(code, syscall, `${file}.123.tmp`), file))]) {
        expect(e).toMatchObject({ kind: 'usage', exitCode: 2 });
        expect(e.message).toContain(file);
        expect(e.message).toMatch(says);
        expect(e.message).toMatch(/cal recover/);
      }
    });
  }

  it('a refusal with no file named, or another error, stays what it was (a bug is still internal)', () => {
    expect(toCalError(Object.assign(new Error('EACCES'), { code: 'EACCES' })).kind).toBe('internal');
    expect(toCalError(refused('ENOENT', 'open', file)).kind).toBe('internal');
    expect(toCalError(new TypeError('x is undefined')).kind).toBe('internal');
  });
});
