import { z } from '../util/zod.js';

/** One tool call a turn made, as the CLI's own record describes it (shell command, MCP call, …). */
export const ToolActivity = z.object({
  kind: z.enum(['shell', 'mcp', 'tool']),
  name: z.string(),
  server: z.string().optional(),
  input: z.unknown().optional(),
  output: z.string().optional(),
  status: z.string().optional(),
});
export type ToolActivity = z.infer<typeof ToolActivity>;
