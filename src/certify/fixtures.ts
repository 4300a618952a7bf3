import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { ProviderName } from '../handles/schema.js';

/**
 * Project content a user would keep so that the certification probe's read-only MCP tool
 * (`calprobe.echo`) runs without a permission prompt. Written only into a scenario's own
 * throwaway project folder, never into a user's project or CLI config.
 *
 * Claude Code's default (auto) permission mode asks the vendor's server-side safety check before
 * an MCP call; the scripted model cannot answer it, so Claude would stop the turn with a dialog.
 * A project allow rule for exactly this tool is how a user lets it through. Codex's scripted home
 * already runs with `approval_policy = "never"`.
 */
export async function allowProbeToolInProject(provider: ProviderName, projectDir: string): Promise<void> {
  if (provider !== 'claude-code') return;
  const dir = path.join(projectDir, '.claude');
  await fs.mkdir(dir, { recursive: true });
  await fs.writeFile(path.join(dir, 'settings.json'), JSON.stringify({ permissions: { allow: ['mcp__calprobe__echo'] } }, null, 2) + '\n');
}
