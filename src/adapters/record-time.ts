/**
 * The time a transcript record says it was written (`timestamp`, ISO 8601, on Claude Code's and
 * Codex's records), or null. Observers use it to pass over records older than the send, so a
 * message sent again with the same text is never matched to an earlier turn's record.
 */
export function recordTime(value: unknown): number | null {
  if (typeof value !== 'object' || value === null) return null;
  const ts = (value as { timestamp?: unknown }).timestamp;
  if (typeof ts !== 'string') return null;
  const ms = Date.parse(ts);
  return Number.isNaN(ms) ? null : ms;
}

export function olderThan(value: unknown, notBefore: Date | undefined): boolean {
  if (!notBefore) return false;
  const t = recordTime(value);
  return t !== null && t < notBefore.getTime();
}
