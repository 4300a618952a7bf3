import { lstatSync } from 'node:fs';
import { CalError } from '../errors.js';
import { writeJsonAtomic } from './fs.js';
import { removedMarkFile } from './paths.js';

/** Written before the removal deletes anything: a cal still writing sees it from then on. */
export async function markRemoved(handlesDir: string, id: string): Promise<void> {
  await writeJsonAtomic(removedMarkFile(handlesDir, id), { id, removedAt: new Date().toISOString() });
}

function isRemoved(handlesDir: string, id: string): boolean {
  try {
    lstatSync(removedMarkFile(handlesDir, id));
    return true;
  } catch {
    return false;
  }
}

function refuseRemoved(handlesDir: string, id: string): void {
  if (isRemoved(handlesDir, id)) {
    throw new CalError('not_found', `handle ${id} was removed (cal remove) while this cal was using it; nothing more is recorded of it`, { handle: id });
  }
}

/**
 * Runs one write of a handle's records unless the handle was removed; when the removal lands
 * while the write runs (its mark appears after the write), `undo` deletes what was written.
 * Either the mark is seen after the write, or it was written later, and the removal's own
 * deletion (which follows its mark) takes what this wrote.
 */
export async function unlessRemoved(handlesDir: string, id: string, write: () => Promise<void>, undo: () => Promise<void>): Promise<void> {
  refuseRemoved(handlesDir, id);
  await write();
  if (isRemoved(handlesDir, id)) {
    await undo();
    refuseRemoved(handlesDir, id);
  }
}
