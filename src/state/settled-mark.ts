import path from 'node:path';
import { z } from '../util/zod.js';
import { readJsonFile, refuseSymlink, writeJsonAtomic } from './fs.js';

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

/** The handle's mark; none (read everything) when there is none yet or it cannot be read. */
export async function readSettledMark(turnsDir: string): Promise<SettledMark> {
  // Nothing is read through a turn folder planted as a symlink (the records' reader refuses it too).
  await refuseSymlink(turnsDir);
  const read = await readJsonFile(path.join(turnsDir, MARK_FILE), SettledMark);
  return read.ok ? read.value : { through: 0, open: [] };
}

export async function saveSettledMark(turnsDir: string, mark: SettledMark): Promise<void> {
  await writeJsonAtomic(path.join(turnsDir, MARK_FILE), mark);
}
