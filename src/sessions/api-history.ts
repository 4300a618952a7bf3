import path from 'node:path';
import { z } from '../util/zod.js';
import { readJsonFile, writeJsonAtomic } from '../state/fs.js';
import { CalError } from '../errors.js';
import type { ChatMessage } from '../adapters/api/types.js';

/** The managed conversation of an API session, kept by cal (the vendor API keeps nothing). */
const ApiHistory = z.object({
  schemaVersion: z.literal(1),
  messages: z.array(z.object({ role: z.enum(['user', 'assistant']), content: z.string() })),
});

export function historyFile(historyDir: string, handleId: string): string {
  return path.join(historyDir, `${handleId}.json`);
}

export async function readHistory(file: string): Promise<ChatMessage[]> {
  const read = await readJsonFile(file, ApiHistory);
  if (read.ok) return read.value.messages;
  if (read.reason === 'missing') return [];
  throw new CalError('invalid_handle', `conversation history ${file} is corrupt (${read.detail}); it was left untouched`);
}

export async function writeHistory(file: string, messages: ChatMessage[]): Promise<void> {
  await writeJsonAtomic(file, { schemaVersion: 1, messages });
}
