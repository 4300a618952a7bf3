import { CalError } from '../errors.js';
import { AgentSessionHandle, HANDLE_SCHEMA_VERSION, VersionProbe } from '../handles/schema.js';
import { readJsonFile, type ReadResult } from './fs.js';

/**
 * The handle in `handles/<id>.json`, read through its schema. A file whose inner id is not its
 * name (a copy of another handle) is corrupt: cal would otherwise act on the other handle's
 * records, home and pane, so it is refused and touched by nothing.
 */
export async function readHandleAt(file: string, id: string): Promise<ReadResult<AgentSessionHandle>> {
  const read = await readJsonFile(file, AgentSessionHandle);
  if (read.ok && read.value.id !== id) return { ok: false, reason: 'corrupt', detail: `it holds the id ${JSON.stringify(read.value.id)}, not its file name's ${id}` };
  return read;
}

/** The handle of id `id` (null when its file is missing); a corrupt or newer file is invalid_handle, left untouched. */
export async function readHandleFile(file: string, id: string): Promise<AgentSessionHandle | null> {
  const read = await readHandleAt(file, id);
  if (read.ok) return read.value;
  if (read.reason === 'missing') return null;
  const probe = await readJsonFile(file, VersionProbe);
  if (probe.ok && probe.value.schemaVersion > HANDLE_SCHEMA_VERSION) {
    throw new CalError(
      'invalid_handle',
      `handle ${id} has schema version ${probe.value.schemaVersion}, newer than this cal understands (${HANDLE_SCHEMA_VERSION}); upgrade cal (the file was left untouched)`,
      { handle: id },
    );
  }
  throw new CalError('invalid_handle', `handle file ${file} is corrupt (${read.detail}); it was left untouched`, { handle: id });
}
