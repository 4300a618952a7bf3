import { readFileSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { CalError } from '../errors.js';
import { z } from '../util/zod.js';

/**
 * `trustedFolders.json`, the record of folder trust Gemini CLI keeps (and Qwen Code, its fork,
 * when its folder trust is switched on): `{"<absolute path>": "TRUST_FOLDER" | "TRUST_PARENT" |
 * "DO_NOT_TRUST"}`, written when a person answers the dialog (research gemini-pi-cli.md).
 * TRUST_FOLDER trusts the folder and everything under it, TRUST_PARENT its parent and everything
 * under that, DO_NOT_TRUST distrusts that folder.
 */
const Rules = z.record(z.string(), z.string());

function readRules(file: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new CalError('usage', `cannot read ${file}: ${(err as Error).message}`);
  }
  let parsed;
  try {
    parsed = Rules.safeParse(text.trim() === '' ? {} : JSON.parse(text));
  } catch (err) {
    throw new CalError('usage', `${file} is not valid JSON: ${(err as Error).message}`);
  }
  if (!parsed.success) throw new CalError('usage', `${file} is not the object of folder paths the CLI writes`);
  return parsed.data;
}

const within = (dir: string, root: string): boolean => dir === root || dir.startsWith(root.endsWith(path.sep) ? root : `${root}${path.sep}`);

/** Whether the rules in `file` trust `cwd` (a folder distrusted by name is not, whatever covers it). */
export function trustedByFile(file: string, cwd: string): boolean {
  const rules = Object.entries(readRules(file)).map(([p, level]) => [path.resolve(p), level] as const);
  if (rules.some(([p, level]) => level === 'DO_NOT_TRUST' && p === cwd)) return false;
  return rules.some(([p, level]) => (level === 'TRUST_FOLDER' && within(cwd, p)) || (level === 'TRUST_PARENT' && within(cwd, path.dirname(p))));
}

/** Trusts `cwd` in `file` as the dialog's "Trust folder" does; resolves whether it wrote. */
export async function trustInFile(file: string, cwd: string): Promise<boolean> {
  if (trustedByFile(file, cwd)) return false;
  const rules = { ...readRules(file), [cwd]: 'TRUST_FOLDER' };
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const { default: writeFileAtomic } = await import('write-file-atomic');
  await writeFileAtomic(file, `${JSON.stringify(rules, null, 2)}\n`, { mode: 0o600 });
  return true;
}
