/**
 * The form of a handle id: 6-32 lowercase letters and digits. Apart from the schema (handles/schema.ts) so
 * that cal's entry can tell an id from a name without loading zod (sessions/early-start.ts).
 */
export const HANDLE_ID_PATTERN = /^[a-z0-9]{6,32}$/;

export function isHandleId(ref: string): boolean {
  return HANDLE_ID_PATTERN.test(ref);
}
