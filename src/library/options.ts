import { CalError } from '../errors.js';
import { ProviderName, ToolPolicy, transports } from '../handles/schema.js';
import { z } from '../util/zod.js';

/**
 * A library call's options, checked whole before anything is recorded or sent (issue 40, item
 * 11): a negative, NaN or infinite timeout, a provider or transport that is a name of Object's
 * prototype (`__proto__`, `constructor`), a wrong type anywhere: each is `usage`, never a raw
 * TypeError or ZodError, and never a turn left `sending`. Keys the types do not name are left to
 * the caller (a plain object of more options is not an error).
 */
const text = z.string();
const seconds = z.number().finite().positive();
const turnCall = {
  timeoutSeconds: seconds.optional(),
  signal: z.custom<AbortSignal>((v) => typeof AbortSignal !== 'undefined' && v instanceof AbortSignal, 'an AbortSignal').optional(),
  onEvent: z.function().optional(),
  onProgress: z.function().optional(),
  hostWaitSeconds: seconds.optional(),
};
const expected = {
  cwd: text.optional(),
  model: text.optional(),
  systemPrompt: text.optional(),
  mcpConfig: text.optional(),
  toolPolicy: ToolPolicy.optional(),
  acpCommand: text.optional(),
};
const Transport = z.enum(transports);
const wait = z.union([z.boolean(), seconds]).optional();

const StartOptions = z.object({ ...turnCall, ...expected, provider: ProviderName, message: z.unknown(), transport: Transport.optional(), name: text.optional(), replace: z.boolean().optional(), cliPath: text.optional(), worktree: z.boolean().optional(), branch: text.optional(), trustWorkingDir: z.boolean().optional() });
const ContinueOptions = z.object({ ...turnCall, ...expected, transport: Transport.optional(), wait, trustWorkingDir: z.boolean().optional() });
const AskOptions = z.object({
  ...turnCall,
  ...expected,
  handle: z.unknown().optional(),
  provider: ProviderName.optional(),
  messages: z.unknown(),
  transport: Transport.optional(),
  name: text.optional(),
  cliPath: text.optional(),
  wait,
});

function check(schema: z.ZodType, value: unknown, call: string): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new CalError('usage', `${call}: the options must be an object`);
  const parsed = schema.safeParse(value);
  if (parsed.success) return;
  const issue = parsed.error.issues[0];
  const at = issue?.path.join('.') || '(options)';
  const got = issue && issue.path.length > 0 ? (value as Record<string, unknown>)[String(issue.path[0])] : value;
  const shown = typeof got === 'number' || typeof got === 'string' ? ` (got ${typeof got === 'number' ? String(got) : JSON.stringify(got)})` : '';
  throw new CalError('usage', `${call}: invalid option ${at}: ${issue?.message ?? 'invalid'}${shown}`);
}

export const checkStartOptions = (o: unknown): void => check(StartOptions, o, 'start()');
export const checkContinueOptions = (o: unknown): void => check(ContinueOptions, o, 'continue()');
export const checkAskOptions = (o: unknown): void => check(AskOptions, o, 'ask()');
