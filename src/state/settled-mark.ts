import path from 'node:path';
import { z } from '../util/zod.js';
import { readJsonFile, refuseNonRegular, refuseSymlink, writeJsonAtomic } from './fs.js';

/**
 * What a continue need not read again of a handle's turn records: every record whose seq is at
 * most `through` is settled (in a terminal status), except those whose seqs are in `open`. No
 * record ever leaves a terminal status, so a mark once true stays true: an old mark only saves
 * less, it never hides a turn that still needs settling.
 */
export const SettledMark = z.object({
  through: z.number().int().nonnegative(),
  open: z.array(z.number().int().nonnegative()),
});
export type SettledMark = z.infer<typeof SettledMark>;

/**
 * Named for what it points at (where unsettled records may be). Not a .json name: the store takes
 * every .json file in a turn folder for a turn record; and it sorts after every record (t…).
 */
const MARK_FILE = 'unsettled.mark';

/** The handle's mark; none (read everything) when there is none yet or its content cannot be used. */
export async function readSettledMark(turnsDir: string): Promise<SettledMark> {
  // Nothing is read or written through a symlink planted as the turn folder or the mark, nor
  // through a FIFO or folder in the mark's place: refused (invalid_handle) before anything is sent.
  const file = path.join(turnsDir, MARK_FILE);
  await refuseSymlink(turnsDir);
  await refuseSymlink(file);
  await refuseNonRegular(file);
  const read = await readJsonFile(file, SettledMark);
  return read.ok ? read.value : { through: 0, open: [] };
}

export async function saveSettledMark(turnsDir: string, mark: SettledMark): Promise<void> {
  await writeJsonAtomic(path.join(turnsDir, MARK_FILE), mark);
}
