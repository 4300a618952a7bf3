import path from 'node:path';
import YAML from 'yaml';
import { z } from '../util/zod.js';
import { CalError } from '../errors.js';
import { HandleName, providerNames, transports } from '../handles/schema.js';
import { readUserFileSync } from '../util/user-file.js';

/**
 * A plan: the durable post-step workflow `cal run` executes (docs/plans.md). Ordered phases on
 * one logical session; each phase is a message to that session or a command.
 */
const PhaseId = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, 'a phase id is letters, digits, _ and -');
const LockName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, 'a lock name is letters, digits, _ and -');

const MessagePhase = z
  .object({
    id: PhaseId,
    message: z.string().min(1),
    lock: LockName.optional(),
    timeout: z.number().positive().optional(),
  })
  .strict();

const CommandPhase = z
  .object({
  id: PhaseId,
  command: z.union([z.string().min(1), z.array(z.string()).min(1)]),
  lock: LockName.optional(),
  timeout: z.number().positive().optional(),
  /** A command that is safe to run twice may be re-run by recover when cal died while it ran. */
  idempotent: z.boolean().default(false),
  })
  .strict();

export const Phase = z.union([MessagePhase, CommandPhase]);
export type Phase = z.infer<typeof Phase>;

const NewSession = z
  .object({
    provider: z.enum(providerNames),
    /** The new session's name (`cal start --name`), so `cal continue <name>` finds it after the run. */
    name: HandleName.optional(),
    cwd: z.string().optional(),
    model: z.string().optional(),
    transport: z.enum(transports).optional(),
    systemPrompt: z.string().optional(),
    mcpConfig: z.string().optional(),
    cliPath: z.string().optional(),
  })
  .strict();
const ExistingSession = z.object({ handle: z.string() }).strict();

const PlanObject = z
  .object({
    version: z.literal(1),
    name: z.string().optional(),
    session: z.union([NewSession, ExistingSession]),
    phases: z.array(Phase).min(1),
  })
  .strict();

export const Plan = PlanObject.superRefine((plan, ctx) => {
    const seen = new Set<string>();
    for (const phase of plan.phases) {
      if (seen.has(phase.id)) ctx.addIssue({ code: 'custom', message: `phase id ${phase.id} appears twice` });
      seen.add(phase.id);
    }
    if ('provider' in plan.session && plan.phases[0] && !('message' in plan.phases[0])) {
      ctx.addIssue({ code: 'custom', message: 'a plan that starts a new session must begin with a message phase' });
    }
  });
export type Plan = z.infer<typeof Plan>;

/** The keys each level of a plan allows (a union's level: every variant's), from the schemas themselves. */
const allowedKeys = {
  plan: Object.keys(PlanObject.shape),
  session: [...new Set([...Object.keys(NewSession.shape), ...Object.keys(ExistingSession.shape)])],
  phase: [...new Set([...Object.keys(MessagePhase.shape), ...Object.keys(CommandPhase.shape)])],
};

function unknownKeys(value: unknown, allowed: string[], where: string): string | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const unknown = Object.keys(value).filter((k) => !allowed.includes(k));
  if (unknown.length === 0) return null;
  const keys = unknown.map((k) => JSON.stringify(k)).join(', ');
  return `${where}: unknown key${unknown.length > 1 ? 's' : ''} ${keys}; the keys allowed here: ${allowed.join(', ')}`;
}

/**
 * The first key no level of the plan knows (a typo such as `mesage`), named with the keys
 * allowed there: zod's strict union would only say "Invalid input".
 */
function firstUnknownKey(raw: unknown): string | null {
  const top = unknownKeys(raw, allowedKeys.plan, '(root)');
  if (top || raw === null || typeof raw !== 'object') return top;
  const plan = raw as { session?: unknown; phases?: unknown };
  const session = unknownKeys(plan.session, allowedKeys.session, 'session');
  if (session) return session;
  if (!Array.isArray(plan.phases)) return null;
  for (const [i, phase] of plan.phases.entries()) {
    const found = unknownKeys(phase, allowedKeys.phase, `phases.${i}`);
    if (found) return found;
  }
  return null;
}

export function isMessagePhase(phase: Phase): phase is z.infer<typeof MessagePhase> {
  return 'message' in phase;
}

/** Reads a plan file (YAML or JSON); relative paths in it are relative to the file. */
export async function readPlan(file: string): Promise<Plan> {
  let text: string;
  text = readUserFileSync(file, 'plan');
  let raw: unknown;
  try {
    raw = /\.json$/i.test(file) ? JSON.parse(text) : YAML.parse(text);
  } catch (err) {
    throw new CalError('usage', `plan ${file} is not valid ${/\.json$/i.test(file) ? 'JSON' : 'YAML'}: ${(err as Error).message}`);
  }
  const unknown = firstUnknownKey(raw);
  if (unknown) throw new CalError('usage', `plan ${file}: ${unknown}`);
  const parsed = Plan.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CalError('usage', `plan ${file}: ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`);
  }
  const plan = parsed.data;
  const base = path.dirname(path.resolve(file));
  if ('provider' in plan.session) {
    if (plan.session.cwd) plan.session.cwd = path.resolve(base, plan.session.cwd);
    if (plan.session.mcpConfig) plan.session.mcpConfig = path.resolve(base, plan.session.mcpConfig);
  }
  return plan;
}
