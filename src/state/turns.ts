import { z } from '../util/zod.js';
import { ToolActivity } from '../handles/tool-activity.js';

export { ToolActivity } from '../handles/tool-activity.js';

/** Turn record (design §5): written durably before anything is sent. */
export const TurnStatus = z.enum(['queued', 'waiting_for_lock', 'sending', 'running', 'completed', 'failed', 'interrupted', 'lost']);
export type TurnStatus = z.infer<typeof TurnStatus>;

export const TurnRecord = z.object({
  schemaVersion: z.literal(1),
  id: z.string(),
  handleId: z.string(),
  seq: z.number().int().nonnegative(),
  message: z.string(),
  status: TurnStatus,
  /** The CLI's own key for the turn (Claude promptId, Codex turn_id). */
  turnKey: z.string().nullable(),
  answer: z.string().nullable(),
  error: z.object({ kind: z.string(), message: z.string() }).nullable(),
  tools: z.array(ToolActivity).default([]),
  /** The CLI process that owns the turn (for recover): pid of cal when sending. */
  ownerPid: z.number().nullable().default(null),
  /** Kernel start time of ownerPid, so a reused pid is not taken for the owner. */
  ownerStartTime: z.string().nullable().default(null),
  /** Who asked for this turn (e.g. `run:<run id>:<phase id>`), so durable work finds it again. */
  correlationId: z.string().nullable().default(null),
  /** When the message left cal (pasted or handed to a launch); null while it may not have. */
  sentAt: z.string().nullable().default(null),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type TurnRecord = z.infer<typeof TurnRecord>;

export const terminalStatuses: ReadonlySet<TurnStatus> = new Set(['completed', 'failed', 'interrupted', 'lost']);

/** Statuses of a turn whose message has not left cal yet (nothing was sent, nothing is owed). */
export const unsentStatuses: ReadonlySet<TurnStatus> = new Set(['queued', 'waiting_for_lock']);
