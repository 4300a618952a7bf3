import { z } from '../util/zod.js';
import { CalError } from '../errors.js';
import { readUserFileSync } from '../util/user-file.js';

/**
 * `--mcp-config F`, Claude Code's own format (`{"mcpServers": {name: {...}}}`), as the adapters
 * that convert it into their CLI's config read it. A CLI's own per-server keys are given by the
 * adapter (Codex's `default_tools_approval_mode`) and kept when the file has them.
 */
const serverShapes = <K extends z.ZodRawShape>(extra: K) =>
  z.union([
    z.object({
      type: z.literal('stdio').optional(),
      command: z.string(),
      args: z.array(z.string()).optional(),
      env: z.record(z.string(), z.string()).optional(),
      cwd: z.string().optional(),
      ...extra,
    }),
    z.object({
      type: z.enum(['http', 'streamable-http', 'sse']).optional(),
      url: z.string(),
      headers: z.record(z.string(), z.string()).optional(),
      ...extra,
    }),
  ]);

export type McpServerEntry<K extends z.ZodRawShape = Record<never, never>> = z.infer<ReturnType<typeof serverShapes<K>>>;

/** The servers of an MCP config file; anything else is `usage` naming the CLI that could not use it. */
export function readMcpServers<K extends z.ZodRawShape = Record<never, never>>(
  file: string,
  cli: string,
  extraKeys: K = {} as K,
): Record<string, McpServerEntry<K>> {
  const McpConfigFile = z.object({ mcpServers: z.record(z.string(), serverShapes(extraKeys)) });
  try {
    const result = McpConfigFile.safeParse(JSON.parse(readUserFileSync(file, '--mcp-config')));
    if (!result.success) throw new Error(result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
    return result.data.mcpServers as Record<string, McpServerEntry<K>>;
  } catch (err) {
    throw new CalError('usage', `--mcp-config ${file} is not an MCP config ${cli} can use ({"mcpServers": {...}}): ${(err as Error).message}`);
  }
}
