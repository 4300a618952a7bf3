import { z } from '../util/zod.js';
import { CalError } from '../errors.js';
import { readUserFileSync } from '../util/user-file.js';

/**
 * `--mcp-config F` is one file format for every CLI (Claude Code's own): `{"mcpServers": {name:
 * {command, args?, env?} | {url, ...}}}`. It is checked when the session starts, before any turn
 * is recorded, so a bad file is the same `usage` error for every CLI rather than whatever each
 * CLI does with it after launch (Claude Code exited, Codex refused its overrides).
 */
const strings = z.record(z.string(), z.string());
const McpServer = z.union([
  // The shapes every CLI's conversion reads (a non-string arg or env value is refused here, not by one CLI after launch).
  z.object({ command: z.string().min(1), args: z.array(z.string()).optional(), env: strings.optional() }).passthrough(),
  z.object({ url: z.string().min(1), headers: strings.optional() }).passthrough(),
]);
const McpConfig = z.object({ mcpServers: z.record(z.string(), McpServer) }).passthrough();

export function checkMcpConfig(file: string): void {
  const text = readUserFileSync(file, '--mcp-config');
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new CalError('usage', `--mcp-config ${file}: it is not JSON; expected {"mcpServers": {"name": {"command": ...}}}`);
  }
  const parsed = McpConfig.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CalError('usage', `--mcp-config ${file}: ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}; expected {"mcpServers": {"name": {"command": ...}}}`);
  }
}
