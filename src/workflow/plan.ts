import path from 'node:path';
import YAML from 'yaml';
import { z } from '../util/zod.js';
import { CalError } from '../errors.js';
import { providerNames, transports } from '../handles/schema.js';
import { readUserFileSync } from '../util/user-file.js';

/**
 * A plan: the durable post-step workflow `cal run` executes (docs/plans.md). Ordered phases on
 * one logical session; each phase is a message to that session or a command.
 */
const PhaseId = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, 'a phase id is letters, digits, _ and -');
const LockName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, 'a lock name is letters, digits, _ and -');

const MessagePhase = z.object({
  id: PhaseId,
  message: z.string().min(1),
  lock: LockName.optional(),
  timeout: z.number().positive().optional(),
});

const CommandPhase = z.object({
  id: PhaseId,
  command: z.union([z.string().min(1), z.array(z.string()).min(1)]),
  lock: LockName.optional(),
  timeout: z.number().positive().optional(),
  /** A command that is safe to run twice may be re-run by recover when cal died while it ran. */
  idempotent: z.boolean().default(false),
});

export const Phase = z.union([MessagePhase, CommandPhase]);
export type Phase = z.infer<typeof Phase>;

export const Plan = z
  .object({
    version: z.literal(1),
    name: z.string().optional(),
    session: z.union([
      z.object({
        provider: z.enum(providerNames),
        cwd: z.string().optional(),
        model: z.string().optional(),
        transport: z.enum(transports).optional(),
        systemPrompt: z.string().optional(),
        mcpConfig: z.string().optional(),
        cliPath: z.string().optional(),
      }),
      z.object({ handle: z.string() }),
    ]),
    phases: z.array(Phase).min(1),
  })
  .superRefine((plan, ctx) => {
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
