import path from 'node:path';
import { z } from '../util/zod.js';
import { CalError } from '../errors.js';
import { readJsonFile } from './fs.js';

/**
 * cal's configuration: `config.json` in the state directory, beside the state it governs (each
 * state directory has its own tmux server, so its own policy). Optional; every key has a
 * default. Read with zod like every other file cal reads; an unreadable one is a usage error
 * naming the file, never silently the defaults.
 */
export const REAP_DEFAULTS = {
  /**
   * A pane nobody used for 15 minutes is ended. A pane is a cache of a session its CLI resumes
   * natively: ending it costs the next continue one native resume (a few seconds), while keeping
   * it costs one CLI's resident memory (about 200 MB for Claude Code) for as long as it idles.
   */
  idleSeconds: 900,
  /**
   * At most 6 live panes, least recently used ended first: at about 200 MB a CLI, 6 panes and the
   * one a turn may be launching stay within 2 GB on a small machine (docs/reaping.md).
   */
  maxLive: 6,
  /** Applied by every turn's cal when the turn ends; `cal reap` applies it (or flags) on demand. */
  auto: true,
} as const;

const ReapConfig = z
  .object({
    /** null: never by idleness. */
    idleSeconds: z.number().nonnegative().nullable().optional(),
    /** null: no cap. */
    maxLive: z.number().int().positive().nullable().optional(),
    auto: z.boolean().optional(),
  })
  .strict();

const CalConfig = z
  .object({
    reap: ReapConfig.optional(),
    /**
     * false: cal never trusts a working folder on the user's behalf, for every session of this
     * state dir (as `--no-trust` on each start and continue; docs/security.md, "What cal trusts").
     */
    trustWorkingDir: z.boolean().optional(),
  })
  .strict();

export interface ReapPolicy {
  idleSeconds: number | null;
  maxLive: number | null;
  auto: boolean;
}

export function configFile(root: string): string {
  return path.join(root, 'config.json');
}

async function readCalConfig(root: string): Promise<z.infer<typeof CalConfig>> {
  const file = configFile(root);
  const read = await readJsonFile(file, CalConfig);
  if (!read.ok && read.reason === 'corrupt') throw new CalError('usage', `cal's config ${file} is unreadable: ${read.detail}`);
  return read.ok ? read.value : {};
}

/** Whether this state dir lets cal trust a session's working folder (`trustWorkingDir`, default true). */
export async function readTrustWorkingDir(root: string): Promise<boolean> {
  return (await readCalConfig(root)).trustWorkingDir !== false;
}

/** The reaping policy of a state directory: its config.json over the defaults. */
export async function readReapPolicy(root: string): Promise<ReapPolicy> {
  const reap = (await readCalConfig(root)).reap ?? {};
  return {
    idleSeconds: reap.idleSeconds === undefined ? REAP_DEFAULTS.idleSeconds : reap.idleSeconds,
    maxLive: reap.maxLive === undefined ? REAP_DEFAULTS.maxLive : reap.maxLive,
    auto: reap.auto ?? REAP_DEFAULTS.auto,
  };
}
